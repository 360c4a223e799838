/*
 * test_allocator.c - Services' cluster IPs and node ports (lib/apiserver/
 * allocator.c) over real HTTP: the kubernetes Service, random and requested
 * values, the 422s and 500 Kubernetes answers, values kept by updates and
 * given back by deletes and type changes, no value given twice when two
 * servers on one store take them from several threads at once (labelled
 * `concurrency`), and values still taken after a restart.
 *
 * Usage: test_allocator [STORE_URL]. Without one a fresh SQLite file, which
 * has one writer per file, so one server takes the concurrent creates of
 * all threads; ctest also runs it against a real etcd (etcd-test-env.sh),
 * where two servers share the store and the threads alternate between them.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <pthread.h>

#include "httptest.h"

static char dir[] = "/tmp/ckube-test-allocator-XXXXXX";
static char store_url[512];
static struct ck_apiserver *server, *second;
static bool shared_store; /* a store several servers may share (etcd); SQLite has one writer */
static int run_id;        /* each test's services get their own namespace-free names */

#include "apitest.h"

#define RANGE      "10.0.0.0/24"
#define PORT_RANGE "30000-30199"

static struct ck_apiserver *start(void)
{
    struct ck_apiserver_config config = {.disable_admission_plugins = "ServiceAccount",
                                         .listen = "127.0.0.1:0",
                                         .store_url = store_url,
                                         .service_cluster_ip_range = RANGE,
                                         .service_node_port_range = PORT_RANGE};
    struct ck_apiserver *s = NULL;
    struct ck_err err = {0};
    if (ck_apiserver_start(&config, &s, &err) < 0)
        fail_msg("start: %s", err.msg);
    return s;
}

static int setup(void **state)
{
    (void)state;
    server = start();
    second = shared_store ? start() : server;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (second != server)
        ck_apiserver_free(second);
    ck_apiserver_free(server);
    second = server = NULL;
    return 0;
}

/* Creates a service on srv; returns the parsed answer and its code in *code. */
static json_t *create_on(struct ck_apiserver *srv, const char *body, long *code)
{
    struct response r;
    http_call(srv, "POST", "/api/v1/namespaces/default/services", body, NULL, &r);
    *code = r.status;
    json_t *v = json_loads(r.body, 0, NULL);
    response_release(&r);
    return v;
}

/* The first element of the array at dotted path arr, then field of it (NULL: the element). */
static json_t *first(json_t *v, const char *arr, const char *field)
{
    json_t *e = json_array_get(at(v, arr), 0);
    return field ? json_object_get(e, field) : e;
}

/* Creates, expecting code, and drops the answer. */
static void create_expect(const char *body, long code)
{
    json_decref(call("POST", "/api/v1/namespaces/default/services", body, code));
}

static char *service_json(const char *name, const char *type, const char *ip, int node_port)
{
    json_t *port = json_pack("{s:i}", "port", 80);
    if (node_port)
        json_object_set_new(port, "nodePort", json_integer(node_port));
    json_t *spec = json_pack("{s:s, s:[o]}", "type", type, "ports", port);
    if (ip)
        json_object_set_new(spec, "clusterIP", json_string(ip));
    json_t *svc = json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", "v1", "kind", "Service",
                            "metadata", "name", name, "spec", spec);
    char *text = json_dumps(svc, JSON_COMPACT);
    json_decref(svc);
    return text;
}

static void test_the_kubernetes_service_has_the_first_ip(void **state)
{
    (void)state;
    json_t *svc = call("GET", "/api/v1/namespaces/default/services/kubernetes", NULL, 200);
    assert_string_equal(str(svc, "spec.clusterIP"), "10.0.0.1");
    assert_int_equal(json_integer_value(first(svc, "spec.ports", "port")), 443);
    assert_string_equal(str(svc, "metadata.labels.component"), "apiserver");
    json_decref(svc);
}

static void test_requested_values_and_their_errors(void **state)
{
    (void)state;
    char *body = service_json("asked", "NodePort", "10.0.0.7", 30007);
    json_t *svc = call("POST", "/api/v1/namespaces/default/services", body, 201);
    assert_string_equal(str(svc, "spec.clusterIP"), "10.0.0.7");
    assert_string_equal(json_string_value(first(svc, "spec.clusterIPs", NULL)), "10.0.0.7");
    assert_int_equal(json_integer_value(first(svc, "spec.ports", "nodePort")), 30007);
    json_decref(svc);
    free(body);

    body = service_json("same-ip", "ClusterIP", "10.0.0.7", 0);
    svc = call("POST", "/api/v1/namespaces/default/services", body, 422);
    assert_string_equal(str(svc, "message"),
                        "Service \"same-ip\" is invalid: spec.clusterIPs: Invalid value: "
                        "[]string{\"10.0.0.7\"}: failed to allocate IP 10.0.0.7: provided IP is "
                        "already allocated");
    json_decref(svc);
    free(body);

    body = service_json("outside", "ClusterIP", "10.1.0.7", 0);
    svc = call("POST", "/api/v1/namespaces/default/services", body, 422);
    assert_non_null(strstr(str(svc, "message"),
                           "failed to allocate IP 10.1.0.7: the provided IP (10.1.0.7) is not in "
                           "the valid range. The range of valid IPs is 10.0.0.0/24"));
    json_decref(svc);
    free(body);

    body = service_json("same-port", "NodePort", NULL, 30007);
    svc = call("POST", "/api/v1/namespaces/default/services", body, 422);
    assert_string_equal(str(svc, "message"),
                        "Service \"same-port\" is invalid: spec.ports[0].nodePort: Invalid value: "
                        "30007: provided port is already allocated");
    json_decref(svc);
    free(body);

    body = service_json("low-port", "NodePort", NULL, 80);
    svc = call("POST", "/api/v1/namespaces/default/services", body, 422);
    assert_non_null(strstr(str(svc, "message"), "provided port is not in the valid range. The "
                                                "range of valid ports is 30000-30199"));
    json_decref(svc);
    free(body);

    /* more node ports than one write may hold */
    json_t *many =
        json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:[]}}", "apiVersion", "v1", "kind", "Service",
                  "metadata", "name", "many", "spec", "type", "NodePort", "ports");
    for (int i = 0; i < 65; i++)
        json_array_append_new(json_object_get(json_object_get(many, "spec"), "ports"),
                              json_pack("{s:s, s:i}", "name",
                                        (char[]){(char)('a' + i % 26), (char)('a' + i / 26), 0},
                                        "port", 1000 + i));
    body = json_dumps(many, JSON_COMPACT);
    json_decref(many);
    expect_status("POST", "/api/v1/namespaces/default/services", body, 422, "Invalid",
                  "spec.ports: Invalid value: 65: a service with node ports may have at most 64 "
                  "ports");
    free(body);

    /* a failed create gives back what it took: the IP it asked for is still free */
    body = service_json("bad-then-ok", "ClusterIP", "10.0.0.8", 30008); /* node port forbidden */
    expect_status("POST", "/api/v1/namespaces/default/services", body, 422, "Invalid", NULL);
    free(body);
    body = service_json("bad-then-ok", "ClusterIP", "10.0.0.8", 0);
    create_expect(body, 201);
    free(body);

    /* a dry run takes nothing */
    body = service_json("dry", "NodePort", "10.0.0.9", 30009);
    json_decref(call("POST", "/api/v1/namespaces/default/services?dryRun=All", body, 201));
    create_expect(body, 201);
    free(body);
}

static void test_updates_keep_take_and_give_back(void **state)
{
    (void)state;
    char *body = service_json("changing", "ClusterIP", NULL, 0);
    json_t *svc = call("POST", "/api/v1/namespaces/default/services", body, 201);
    char ip[32];
    snprintf(ip, sizeof(ip), "%s", str(svc, "spec.clusterIP"));
    json_decref(svc);
    free(body);

    /* a PUT without the cluster IP keeps it; to NodePort takes a port */
    body = service_json("changing", "NodePort", NULL, 0);
    svc = call("PUT", "/api/v1/namespaces/default/services/changing", body, 200);
    assert_string_equal(str(svc, "spec.clusterIP"), ip);
    long long port = json_integer_value(first(svc, "spec.ports", "nodePort"));
    assert_true(port >= 30000 && port <= 30199);
    json_decref(svc);
    free(body);

    /* a merge patch that does not name the port keeps it */
    svc = call_h("PATCH", "/api/v1/namespaces/default/services/changing",
                 "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}", merge_type, 200);
    assert_int_equal(json_integer_value(first(svc, "spec.ports", "nodePort")), port);
    json_decref(svc);

    /* the cluster IP never changes */
    body = service_json("changing", "NodePort", "10.0.0.200", 0);
    svc = call("PUT", "/api/v1/namespaces/default/services/changing", body, 422);
    assert_non_null(strstr(str(svc, "message"), "spec.clusterIPs[0]: Invalid value: "
                                                "\"10.0.0.200\": may not change once set"));
    json_decref(svc);
    free(body);
    body = service_json("takes-200", "ClusterIP", "10.0.0.200", 0); /* and it was not kept */
    create_expect(body, 201);
    free(body);

    /* back to ClusterIP (the port dropped) gives the port back */
    char patch[128];
    snprintf(patch, sizeof(patch), "{\"spec\":{\"type\":\"ClusterIP\",\"ports\":[{\"port\":80}]}}");
    svc = call_h("PATCH", "/api/v1/namespaces/default/services/changing", patch, merge_type, 200);
    assert_int_equal(json_integer_value(first(svc, "spec.ports", "nodePort")), 0);
    json_decref(svc);
    char name[32];
    snprintf(name, sizeof(name), "port-%lld", port);
    body = service_json(name, "NodePort", NULL, (int)port);
    create_expect(body, 201);
    free(body);

    /* a delete gives back the IP */
    json_decref(call("DELETE", "/api/v1/namespaces/default/services/changing", NULL, 200));
    body = service_json("reuses-ip", "ClusterIP", ip, 0);
    create_expect(body, 201);
    free(body);
}

static void test_headless_and_external_name_take_nothing(void **state)
{
    (void)state;
    json_t *svc =
        call("POST", "/api/v1/namespaces/default/services",
             "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":"
             "\"headless\"},\"spec\":{\"clusterIP\":\"None\",\"selector\":{\"a\":\"b\"}}}",
             201);
    assert_string_equal(str(svc, "spec.clusterIP"), "None");
    assert_string_equal(json_string_value(first(svc, "spec.clusterIPs", NULL)), "None");
    json_decref(svc);
    svc = call("POST", "/api/v1/namespaces/default/services",
               "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"ext\"},"
               "\"spec\":{\"type\":\"ExternalName\",\"externalName\":\"db.example.com\"}}",
               201);
    assert_null(at(svc, "spec.clusterIP"));
    json_decref(svc);
    expect_status("POST", "/api/v1/namespaces/default/services",
                  "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"ext2\"},"
                  "\"spec\":{\"type\":\"ExternalName\"}}",
                  422, "Invalid", "spec.externalName: Required value");
}

/* ---- no value twice: two servers, several threads ------------------------- */

#define THREADS        4
#define PER_THREAD     20
#define TOTAL_SERVICES (THREADS * PER_THREAD)

struct created {
    char ip[32];
    long long port;
};

static struct created results[TOTAL_SERVICES];

static void *creator(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        char name[64];
        snprintf(name, sizeof(name), "burst-%d-%d-%d", run_id, t, i);
        char *body = service_json(name, "NodePort", NULL, 0);
        long code = 0;
        json_t *svc = create_on(t % 2 ? second : server, body, &code);
        free(body);
        struct created *c = &results[t * PER_THREAD + i];
        if (code == 201) {
            snprintf(c->ip, sizeof(c->ip), "%s", str(svc, "spec.clusterIP"));
            c->port = json_integer_value(first(svc, "spec.ports", "nodePort"));
        }
        json_decref(svc);
    }
    return NULL;
}

static void test_no_value_twice_across_two_servers(void **state)
{
    (void)state;
    run_id++;
    memset(results, 0, sizeof(results));
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++)
        assert_int_equal(pthread_create(&threads[t], NULL, creator, (void *)(intptr_t)t), 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    for (int i = 0; i < TOTAL_SERVICES; i++) {
        if (!results[i].ip[0])
            fail_msg("service %d was not created", i);
        for (int j = 0; j < i; j++) {
            if (strcmp(results[i].ip, results[j].ip) == 0)
                fail_msg("IP %s given twice", results[i].ip);
            if (results[i].port == results[j].port)
                fail_msg("node port %lld given twice", results[i].port);
        }
    }
    /* what the store says matches: each IP and port held once, by its service */
    json_t *list = call("GET", "/api/v1/services?fieldSelector=spec.type%3DNodePort", NULL, 200);
    size_t i, bursts = 0;
    json_t *item;
    json_array_foreach(json_object_get(list, "items"), i, item)
    {
        assert_string_equal(str(item, "spec.type"), "NodePort");
        bursts += strncmp(str(item, "metadata.name"), "burst-", 6) == 0;
    }
    assert_int_equal(bursts, TOTAL_SERVICES);
    json_decref(list);
}

/* ---- restarts and a full range -------------------------------------------- */

static void test_values_stay_taken_after_a_restart(void **state)
{
    char *body = service_json("before-restart", "NodePort", NULL, 0);
    json_t *svc = call("POST", "/api/v1/namespaces/default/services", body, 201);
    free(body);
    char ip[32];
    snprintf(ip, sizeof(ip), "%s", str(svc, "spec.clusterIP"));
    int port = (int)json_integer_value(first(svc, "spec.ports", "nodePort"));
    json_decref(svc);
    teardown(state);
    setup(state);
    body = service_json("after-restart", "ClusterIP", ip, 0);
    expect_status("POST", "/api/v1/namespaces/default/services", body, 422, "Invalid",
                  "provided IP is already allocated");
    free(body);
    body = service_json("after-restart", "NodePort", NULL, port);
    expect_status("POST", "/api/v1/namespaces/default/services", body, 422, "Invalid",
                  "provided port is already allocated");
    free(body);
    /* the kubernetes Service is still the one of the first start */
    svc = call("GET", "/api/v1/namespaces/default/services/kubernetes", NULL, 200);
    assert_string_equal(str(svc, "spec.clusterIP"), "10.0.0.1");
    json_decref(svc);
}

static void test_a_full_range_is_an_internal_error(void **state)
{
    (void)state;
    /* 200 node ports; the tests before took some: fill the rest, then one more */
    int created = 0;
    for (int i = 0; i < 260; i++) {
        char name[64];
        snprintf(name, sizeof(name), "fill-%d", i);
        char *body = service_json(name, "NodePort", NULL, 0);
        long code = 0;
        json_t *v = create_on(server, body, &code);
        free(body);
        if (code == 201) {
            created++;
            json_decref(v);
            continue;
        }
        /* the IPs (253 for services) or the ports ran out first */
        assert_int_equal(code, 500);
        const char *msg = str(v, "message");
        if (!strstr(msg, "failed to allocate a nodePort: range is full") &&
            !strstr(msg, "failed to allocate a serviceIP: range is full"))
            fail_msg("unexpected: %s", msg);
        json_decref(v);
        break;
    }
    assert_true(created > 0 && created < 260);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        snprintf(store_url, sizeof(store_url), "%s", argv[1]);
        shared_store = strncmp(store_url, "etcd://", 7) == 0;
    } else if (test_store_dir(dir, store_url, sizeof(store_url)) < 0) {
        perror("mkdtemp");
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_kubernetes_service_has_the_first_ip),
        cmocka_unit_test(test_requested_values_and_their_errors),
        cmocka_unit_test(test_updates_keep_take_and_give_back),
        cmocka_unit_test(test_headless_and_external_name_take_nothing),
        cmocka_unit_test(test_no_value_twice_across_two_servers),
        cmocka_unit_test(test_values_stay_taken_after_a_restart),
        cmocka_unit_test(test_a_full_range_is_an_internal_error),
    };
    int failed = cmocka_run_group_tests(tests, setup, teardown);
    curl_global_cleanup();
    if (argc <= 1)
        test_store_remove(dir);
    return failed;
}
