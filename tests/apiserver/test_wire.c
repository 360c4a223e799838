/*
 * test_wire.c - the wire details clients compare byte for byte, over real
 * HTTP (lib/apiserver/media.c, request.c, server.c): every JSON answer ends
 * with a line break (objects, lists, Tables, Status errors, discovery);
 * ?pretty=true and the User-Agents of curl, Wget and browsers get indented
 * JSON without one; Accept: application/yaml answers objects, lists and
 * Status in YAML and a YAML-only watch is a 406 (said in YAML); application/yaml bodies
 * create and update; a body without Content-Type is read as JSON, and YAML
 * sent so gets kube-apiserver's 400; /openapi/v2 is Swagger 2.0 from the
 * same schemas as /openapi/v3, both with an ETag and 304 for If-None-Match;
 * aggregated discovery negotiated on /api and /apis, with its ETag;
 * /version/ is /version.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include "httptest.h"

static char dir[] = "/tmp/ckube-test-wire-XXXXXX";
static struct ck_apiserver *server;

#include "apitest.h"
#include "ckube/internal/util.h"

#define SAS "/api/v1/namespaces/default/serviceaccounts"

static const char *const accept_yaml[] = {"Accept: application/yaml", NULL};
static const char *const table[] = {"Accept: application/json;as=Table;v=v1;g=meta.k8s.io", NULL};

/* The call's body, asserting the status code; the caller frees r. */
static void get(const char *method, const char *path, const char *body, const char *const *headers,
                long want, struct response *r)
{
    http_call(server, method, path, body, headers, r);
    if (r->status != want)
        fail_msg("%s %s: %ld, want %ld: %s", method, path, r->status, want, r->body);
}

static bool ends_with_one_newline(const struct response *r)
{
    return r->len >= 2 && r->body[r->len - 1] == '\n' && r->body[r->len - 2] != '\n';
}

static bool has_header(const struct response *r, const char *line)
{
    return strcasestr(r->headers, line) != NULL;
}

static void test_json_answers_end_with_a_newline(void **state)
{
    (void)state;
    struct {
        const char *method, *path, *body;
        const char *const *headers;
        long code;
    } cases[] = {
        {"POST", SAS, "{\"metadata\":{\"name\":\"nl\"}}", NULL, 201},
        {"GET", SAS "/nl", NULL, NULL, 200},
        {"GET", SAS, NULL, NULL, 200},
        {"GET", SAS, NULL, table, 200},
        {"GET", SAS "/missing", NULL, NULL, 404},
        {"POST", SAS, "{\"metadata\":{\"name\":\"nl\"}}", NULL, 409},
        {"GET", "/api", NULL, NULL, 200},
        {"GET", "/apis", NULL, NULL, 200},
        {"GET", "/api/v1", NULL, NULL, 200},
        {"GET", "/apis/apps/v1", NULL, NULL, 200},
        {"DELETE", SAS "/nl", NULL, NULL, 200},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct response r;
        get(cases[i].method, cases[i].path, cases[i].body, cases[i].headers, cases[i].code, &r);
        if (!ends_with_one_newline(&r))
            fail_msg("%s %s: no final line break: %s", cases[i].method, cases[i].path, r.body);
        /* compact: the one line break is the last byte */
        assert_ptr_equal(strchr(r.body, '\n'), r.body + r.len - 1);
        response_release(&r);
    }
}

static void test_two_conflicts_have_the_same_body(void **state)
{
    (void)state;
    const char *sa = "{\"metadata\":{\"name\":\"twice\"}}";
    struct response first, second;
    json_decref(call("POST", SAS, sa, 201));
    get("POST", SAS, sa, NULL, 409, &first);
    get("POST", SAS, sa, NULL, 409, &second);
    assert_string_equal(first.body, second.body);
    assert_true(ends_with_one_newline(&first));
    response_release(&first);
    response_release(&second);
    json_decref(call("DELETE", SAS "/twice", NULL, 200));
}

static void test_pretty_output(void **state)
{
    (void)state;
    static const char *const curl_agent[] = {"User-Agent: curl/8.5.0", NULL};
    static const char *const wget_agent[] = {"User-Agent: Wget/1.21", NULL};
    static const char *const browser[] = {"User-Agent: Mozilla/5.0 (X11)", NULL};
    static const char *const python[] = {"User-Agent: OpenAPI-Generator/31.0.0/python", NULL};
    struct {
        const char *path;
        const char *const *headers;
        bool pretty;
    } cases[] = {
        {"/api/v1/namespaces/default?pretty=true", NULL, true},
        {"/api/v1/namespaces/default?pretty=1", python, true},
        {"/api/v1/namespaces/default", curl_agent, true},
        {"/api/v1/namespaces/default", wget_agent, true},
        {"/api/v1/namespaces/default", browser, true},
        {"/api/v1/namespaces/missing", curl_agent, true},
        {"/api/v1/namespaces", curl_agent, true},
        {"/api/v1/namespaces/default", python, false},
        {"/api/v1/namespaces/default", NULL, false},
        {"/api/v1/namespaces/default?pretty=false", curl_agent, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct response r;
        http_call(server, "GET", cases[i].path, NULL, cases[i].headers, &r);
        json_t *v = json_loadb(r.body, r.len, 0, NULL);
        assert_non_null(v);
        if (cases[i].pretty) {
            /* json.MarshalIndent: two spaces, ": ", and no final line break */
            if (strncmp(r.body, "{\n  \"", 5) != 0 || r.body[r.len - 1] != '}')
                fail_msg("%s: not indented: %s", cases[i].path, r.body);
            char *want = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
            assert_string_equal(r.body, want);
            free(want);
        } else {
            assert_true(ends_with_one_newline(&r));
            assert_null(strstr(r.body, "\n "));
        }
        json_decref(v);
        response_release(&r);
    }
}

static void test_yaml_answers(void **state)
{
    (void)state;
    struct response r;
    get("GET", "/api/v1/namespaces/default", NULL, accept_yaml, 200, &r);
    assert_true(has_header(&r, "Content-Type: application/yaml\r\n"));
    assert_true(strncmp(r.body, "apiVersion: v1\nkind: Namespace\nmetadata:\n", 41) == 0);
    /* go-yaml quotes what a YAML 1.1 reader would take for a timestamp or a number */
    assert_non_null(strstr(r.body, "\n  creationTimestamp: \""));
    assert_non_null(strstr(r.body, "\n  resourceVersion: \""));
    assert_non_null(strstr(r.body, "\n  finalizers:\n  - kubernetes\n"));
    json_t *obj = NULL;
    assert_int_equal(ck__yaml_to_json(r.body, r.len, &obj, NULL), 0);
    assert_string_equal(str(obj, "metadata.name"), "default");
    json_decref(obj);
    response_release(&r);

    get("GET", "/api/v1/namespaces", NULL, accept_yaml, 200, &r);
    assert_true(strncmp(r.body, "apiVersion: v1\nitems:\n- apiVersion: v1\n", 39) == 0);
    assert_non_null(strstr(r.body, "\nkind: NamespaceList\n"));
    response_release(&r);

    get("GET", "/api/v1/namespaces/missing", NULL, accept_yaml, 404, &r);
    assert_true(has_header(&r, "Content-Type: application/yaml\r\n"));
    assert_string_equal(r.body, "apiVersion: v1\n"
                                "code: 404\n"
                                "details:\n"
                                "  kind: namespaces\n"
                                "  name: missing\n"
                                "kind: Status\n"
                                "message: namespaces \"missing\" not found\n"
                                "metadata: {}\n"
                                "reason: NotFound\n"
                                "status: Failure\n");
    response_release(&r);

    /* a Table in YAML: the bare media type, as kube-apiserver writes it (no as=Table) */
    static const char *const yaml_table[] = {"Accept: application/yaml;as=Table;v=v1;g=meta.k8s.io",
                                             NULL};
    get("GET", "/api/v1/namespaces", NULL, yaml_table, 200, &r);
    assert_true(has_header(&r, "Content-Type: application/yaml\r\n"));
    assert_non_null(strstr(r.body, "\nkind: Table\n"));
    response_release(&r);
}

static void test_yaml_watch_is_not_acceptable(void **state)
{
    (void)state;
    struct response r;
    get("GET", SAS "?watch=true", NULL, accept_yaml, 406, &r);
    /* the error itself is no stream: it comes in the YAML asked for */
    assert_true(has_header(&r, "Content-Type: application/yaml"));
    /* (a long YAML string is folded at 80 columns, as go-yaml writes it) */
    assert_non_null(strstr(r.body, "only the following media types are accepted: "
                                   "application/json, application/vnd.kubernetes.protobuf,"));
    response_release(&r);
    /* a JSON entry after the YAML one is what the stream is written in */
    static const char *const yaml_then_json[] = {"Accept: application/yaml, application/json",
                                                 NULL};
    get("GET", SAS "?watch=true&timeoutSeconds=1", NULL, yaml_then_json, 200, &r);
    assert_true(has_header(&r, "Content-Type: application/json"));
    response_release(&r);
}

static void test_yaml_bodies_create_and_update(void **state)
{
    (void)state;
    static const char *const yaml_in[] = {"Content-Type: application/yaml", NULL};
    struct response r;
    get("POST", SAS,
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: from-yaml\n"
        "  labels:\n    on: \"yes\"\n",
        yaml_in, 201, &r);
    json_t *created = parse(&r);
    assert_string_equal(str(created, "metadata.labels.on"), "yes");
    char put[512];
    snprintf(put, sizeof(put),
             "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: from-yaml\n"
             "  resourceVersion: \"%s\"\n  labels:\n    changed: \"true\"\n",
             str(created, "metadata.resourceVersion"));
    json_decref(created);
    response_release(&r);
    get("PUT", SAS "/from-yaml", put, yaml_in, 200, &r);
    json_t *updated = parse(&r);
    assert_string_equal(str(updated, "metadata.labels.changed"), "true");
    json_decref(updated);
    response_release(&r);

    get("POST", SAS, "metadata: [unclosed\n", yaml_in, 400, &r);
    assert_non_null(strstr(r.body, "\"reason\":\"BadRequest\""));
    response_release(&r);
    json_decref(call("DELETE", SAS "/from-yaml", NULL, 200));
}

static void test_body_without_content_type(void **state)
{
    (void)state;
    static const char *const untyped[] = {"Content-Type:", NULL};
    struct response r;
    get("POST", SAS, "{\"metadata\":{\"name\":\"untyped\"}}", untyped, 201, &r);
    response_release(&r);
    /* YAML without its type is read as JSON, as kube-apiserver reads it */
    get("POST", SAS, "apiVersion: v1\nkind: ServiceAccount\n", untyped, 400, &r);
    json_t *status = parse(&r);
    assert_string_equal(
        str(status, "message"),
        "the object provided is unrecognized (must be of type ServiceAccount): couldn't get "
        "version/kind; json parse error: invalid character 'a' looking for beginning of value "
        "(61706956657273696f6e3a2076310a6b696e643a20536572766963654163 ...)");
    json_decref(status);
    response_release(&r);
    static const char *const form[] = {"Content-Type: text/plain", NULL};
    get("POST", SAS, "{}", form, 415, &r);
    assert_non_null(strstr(r.body, "accepted media types include: application/json, "
                                   "application/yaml"));
    response_release(&r);
    json_decref(call("DELETE", SAS "/untyped", NULL, 200));
}

/* The ETag header's value (quotes included) into buf. */
static void etag_of(const struct response *r, char *buf, size_t size)
{
    const char *h = strcasestr(r->headers, "\nETag: ");
    assert_non_null(h);
    h += 7;
    size_t n = strcspn(h, "\r\n");
    assert_true(n > 2 && n < size && h[0] == '"' && h[n - 1] == '"');
    memcpy(buf, h, n);
    buf[n] = '\0';
}

static void expect_etag_and_304(const char *path)
{
    struct response r;
    get("GET", path, NULL, NULL, 200, &r);
    char etag[200], header[256];
    etag_of(&r, etag, sizeof(etag));
    assert_true(has_header(&r, "Content-Type: application/json"));
    response_release(&r);
    snprintf(header, sizeof(header), "If-None-Match: %s", etag);
    const char *const conditional[] = {header, NULL};
    get("GET", path, NULL, conditional, 304, &r);
    assert_int_equal(r.len, 0);
    response_release(&r);
    const char *const other[] = {"If-None-Match: \"0123\"", NULL};
    get("GET", path, NULL, other, 200, &r);
    response_release(&r);
}

/*
 * Aggregated discovery on /api and /apis: asked for as kubectl asks (v2, then
 * v2beta1, then plain JSON), v2beta1 alone, or preferred by goautoneg's order
 * (more parameters first); plain JSON and other shapes get the legacy lists;
 * an ETag with 304, Vary and Cache-Control as kube-apiserver sends them.
 */
static void test_aggregated_discovery(void **state)
{
    (void)state;
    static const char kubectl_accept[] =
        "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
        "application/json";
    static const struct {
        const char *path, *accept, *kind, *version; /* version NULL: legacy */
    } cases[] = {
        {"/apis", kubectl_accept, "APIGroupDiscoveryList", "v2"},
        {"/api", kubectl_accept, "APIGroupDiscoveryList", "v2"},
        {"/apis/", kubectl_accept, "APIGroupDiscoveryList", "v2"},
        {"/apis",
         "Accept: application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
         "APIGroupDiscoveryList", "v2beta1"},
        {"/apis",
         "Accept: application/json, "
         "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
         "APIGroupDiscoveryList", "v2"},
        {"/apis",
         "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.5, "
         "application/json",
         "APIGroupList", NULL},
        {"/apis", "Accept: application/json", "APIGroupList", NULL},
        {"/api", "Accept: */*", "APIVersions", NULL},
        {"/apis/apps/v1", kubectl_accept, "APIResourceList", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *const headers[] = {cases[i].accept, NULL};
        struct response r;
        get("GET", cases[i].path, NULL, headers, 200, &r);
        json_t *doc = parse(&r);
        if (strcmp(str(doc, "kind"), cases[i].kind) != 0)
            fail_msg("%s with %s: %s, want %s", cases[i].path, cases[i].accept, str(doc, "kind"),
                     cases[i].kind);
        assert_true(ends_with_one_newline(&r));
        if (cases[i].version) {
            char type[160], api_version[64];
            snprintf(type, sizeof(type),
                     "Content-Type: application/json;g=apidiscovery.k8s.io;v=%s;"
                     "as=APIGroupDiscoveryList",
                     cases[i].version);
            snprintf(api_version, sizeof(api_version), "apidiscovery.k8s.io/%s", cases[i].version);
            assert_true(has_header(&r, type));
            assert_string_equal(str(doc, "apiVersion"), api_version);
            assert_true(has_header(&r, "Vary: Accept"));
            assert_true(has_header(&r, "Cache-Control: public"));
            /* /api holds the core group alone, /apis every other */
            json_t *items = json_object_get(doc, "items");
            const char *first = json_string_value(
                json_object_get(json_object_get(json_array_get(items, 0), "metadata"), "name"));
            if (strncmp(cases[i].path, "/apis", 5) == 0)
                assert_true(first && *first && json_array_size(items) > 5);
            else
                assert_true(!first && json_array_size(items) == 1);
        }
        json_decref(doc);
        response_release(&r);
    }
    /* the ETag names the document: 304 for it, the document for another */
    struct response r;
    const char *const agg[] = {kubectl_accept, NULL};
    get("GET", "/apis", NULL, agg, 200, &r);
    char etag[200], header[256];
    etag_of(&r, etag, sizeof(etag));
    response_release(&r);
    snprintf(header, sizeof(header), "If-None-Match: %s", etag);
    const char *const conditional[] = {kubectl_accept, header, NULL};
    get("GET", "/apis", NULL, conditional, 304, &r);
    assert_int_equal(r.len, 0);
    response_release(&r);
    const char *const other[] = {kubectl_accept, "If-None-Match: \"0123\"", NULL};
    get("GET", "/apis", NULL, other, 200, &r);
    response_release(&r);
    /* /api's document is another one, with another ETag */
    get("GET", "/api", NULL, agg, 200, &r);
    char core_etag[200];
    etag_of(&r, core_etag, sizeof(core_etag));
    assert_string_not_equal(core_etag, etag);
    response_release(&r);
}

static void test_openapi_v2_from_the_v3_schemas(void **state)
{
    (void)state;
    struct response r;
    get("GET", "/openapi/v2", NULL, NULL, 200, &r);
    assert_null(strstr(r.body, "#/components/"));
    json_t *doc = parse(&r);
    response_release(&r);
    assert_string_equal(str(doc, "swagger"), "2.0");
    json_t *defs = json_object_get(doc, "definitions");
    json_t *pod = json_object_get(defs, "io.k8s.api.core.v1.Pod");
    assert_non_null(pod);

    /* the same schemas as v3: every v3 schema is a v2 definition */
    json_t *v3 = call("GET", "/openapi/v3/api/v1", NULL, 200);
    const char *name;
    json_t *schema;
    json_object_foreach(json_object_get(json_object_get(v3, "components"), "schemas"), name, schema)
    {
        if (!json_object_get(defs, name))
            fail_msg("v3 schema %s is not a v2 definition", name);
    }
    json_decref(v3);

    json_t *paths = json_object_get(doc, "paths");
    json_t *patch = json_object_get(
        json_object_get(paths, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"), "patch");
    assert_non_null(patch);
    json_t *consumes = json_object_get(patch, "consumes");
    assert_int_equal(json_array_size(consumes), 3);
    size_t i;
    json_t *p;
    bool field_validation = false;
    json_array_foreach(json_object_get(patch, "parameters"), i, p)
    {
        if (strcmp(str(p, "name"), "fieldValidation") == 0) {
            field_validation = true;
            assert_string_equal(str(p, "type"), "string");
        }
    }
    assert_true(field_validation);
    json_t *ok = json_object_get(json_object_get(patch, "responses"), "200");
    assert_string_equal(str(json_object_get(ok, "schema"), "$ref"),
                        "#/definitions/io.k8s.api.apps.v1.Deployment");
    json_decref(doc);

    expect_etag_and_304("/openapi/v2");
    expect_etag_and_304("/openapi/v3");
    expect_etag_and_304("/openapi/v3/apis/apps/v1");
    static const char *const xml[] = {"Accept: application/xml", NULL};
    get("GET", "/openapi/v2", NULL, xml, 406, &r);
    response_release(&r);
}

static void test_version_with_a_slash(void **state)
{
    (void)state;
    struct response plain, slash;
    get("GET", "/version", NULL, NULL, 200, &plain);
    get("GET", "/version/", NULL, NULL, 200, &slash);
    assert_string_equal(plain.body, slash.body);
    assert_non_null(strstr(slash.body, "\"gitVersion\""));
    response_release(&plain);
    response_release(&slash);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_answers_end_with_a_newline),
        cmocka_unit_test(test_two_conflicts_have_the_same_body),
        cmocka_unit_test(test_pretty_output),
        cmocka_unit_test(test_yaml_answers),
        cmocka_unit_test(test_yaml_watch_is_not_acceptable),
        cmocka_unit_test(test_yaml_bodies_create_and_update),
        cmocka_unit_test(test_body_without_content_type),
        cmocka_unit_test(test_openapi_v2_from_the_v3_schemas),
        cmocka_unit_test(test_aggregated_discovery),
        cmocka_unit_test(test_version_with_a_slash),
    };
    return cmocka_run_group_tests(tests, apitest_setup, apitest_teardown);
}
