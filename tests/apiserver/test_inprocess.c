/*
 * test_inprocess.c - lib/apiserver/inprocess.c, the in-process list/watch source of
 * `ckube server`'s components, against the REST one (ck_rest_list_watch_init) over TLS
 * with RBAC on, both acting as the same user: the same List objects page by page (limit
 * and continue, a label selector), the same events from a resourceVersion (ADDED,
 * MODIFIED, DELETED, an object leaving a selector's selection as DELETED), 410 for a
 * compacted revision, Kubernetes' 403 for a collection the user may not read, a stop
 * noticed within a second, custom resources in each served version, the metadata form against the
 * metadata client's, and an informer factory whose informers (and metadata informers) list and
 * watch in-process through ck_informer_factory_set_list_watch(), and a node's own reads (as
 * system:node:NAME in system:nodes, as `ckube server`'s own node agent lists): the pods bound
 * to it as over REST, and the node authorizer's 403 for Secrets and ConfigMaps it has no
 * relationship with, word for word.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <pthread.h>
#include <time.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function" /* we use only the store helpers */
#include "apiserver/httptest.h"
#pragma GCC diagnostic pop
#include "ckube/informer.h"
#include "ckube/rest.h"
#include "ckube/store.h"

static const struct ck_resource configmaps = {"", "v1", "configmaps", true};
static const struct ck_resource rolebindings = {"rbac.authorization.k8s.io", "v1", "rolebindings",
                                                true};
static const struct ck_resource pods = {"", "v1", "pods", true};
static const struct ck_resource secrets = {"", "v1", "secrets", true};
static const char *const authenticated[] = {"system:authenticated"};
static const char *const node_groups[] = {"system:nodes", "system:authenticated"};

struct fixture {
    char dir[64];
    char store[128];
    char pki[96];
    char tokens[96];
    struct ck_apiserver *server;
    struct ck_rest *admin;
    struct ck_rest *jane; /* a token user who may view namespace default only */
    struct ck_rest *node; /* system:node:n1 in system:nodes, a token user */
};

static void start(struct fixture *f)
{
    struct ck_apiserver_config config = {.disable_admission_plugins = "ServiceAccount",
                                         .listen = "127.0.0.1:0",
                                         .store_url = f->store,
                                         .pki_dir = f->pki,
                                         .token_auth_file = f->tokens};
    struct ck_err err = {0};
    assert_int_equal(ck_apiserver_start(&config, &f->server, &err), 0);
    char kubeconfig[128], ca[128];
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", f->dir);
    assert_int_equal(ck_apiserver_write_kubeconfig(f->server, kubeconfig, &err), 0);
    struct ck_kubeconfig *kc = NULL;
    assert_int_equal(ck_kubeconfig_load(kubeconfig, NULL, &kc, &err), 0);
    assert_int_equal(ck_rest_new_from_kubeconfig(kc, -1, 0, &f->admin, &err), 0);
    ck_kubeconfig_free(kc);
    snprintf(ca, sizeof(ca), "%s/ca.crt", f->pki);
    struct ck_rest_config rc = {
        .server = ck_apiserver_url(f->server), .token = "jane-token", .ca_file = ca, .qps = -1};
    assert_int_equal(ck_rest_new(&rc, &f->jane, &err), 0);
    rc.token = "node-token";
    assert_int_equal(ck_rest_new(&rc, &f->node, &err), 0);
}

static void stop(struct fixture *f)
{
    f->jane = ck_rest_free(f->jane);
    f->node = ck_rest_free(f->node);
    f->admin = ck_rest_free(f->admin);
    f->server = ck_apiserver_free(f->server);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/ck-inproc-XXXXXX");
    assert_int_equal(test_store_dir(f->dir, f->store, sizeof(f->store)), 0);
    snprintf(f->pki, sizeof(f->pki), "%s/pki", f->dir);
    snprintf(f->tokens, sizeof(f->tokens), "%s/tokens.csv", f->dir);
    FILE *t = fopen(f->tokens, "w");
    assert_non_null(t);
    fputs("jane-token,jane,1001\n", t);
    fputs("node-token,system:node:n1,1002,system:nodes\n", t);
    fclose(t);
    start(f);
    json_t *rb = json_pack(
        "{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:s}]}", "apiVersion",
        "rbac.authorization.k8s.io/v1", "kind", "RoleBinding", "metadata", "name", "jane-view",
        "roleRef", "apiGroup", "rbac.authorization.k8s.io", "kind", "ClusterRole", "name", "view",
        "subjects", "apiGroup", "rbac.authorization.k8s.io", "kind", "User", "name", "jane");
    struct ck_err err = {0};
    assert_int_equal(ck_rest_create(f->admin, &rolebindings, "default", rb, NULL, &err), 0);
    json_decref(rb);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    stop(f);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static json_t *configmap(const char *name, const char *app, const char *value)
{
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
                     "ConfigMap", "metadata", "name", name, "labels", "app", app, "data", "v",
                     value);
}

static void create(struct fixture *f, const char *name, const char *app)
{
    json_t *cm = configmap(name, app, "1");
    struct ck_err err = {0};
    assert_int_equal(ck_rest_create(f->admin, &configmaps, "default", cm, NULL, &err), 0);
    json_decref(cm);
}

/* Replaces name with app and value (an update without a resourceVersion). */
static void update(struct fixture *f, const char *name, const char *app, const char *value)
{
    json_t *cm = configmap(name, app, value);
    struct ck_err err = {0};
    assert_int_equal(ck_rest_update(f->admin, &configmaps, "default", cm, NULL, &err), 0);
    json_decref(cm);
}

/* The in-process list/watch of configmaps in namespace as jane (system:authenticated). */
static void jane_in_process(struct fixture *f, const char *namespace, struct ck_list_watch *lw)
{
    struct ck_err err = {0};
    assert_int_equal(ck_apiserver_list_watch_init(f->server, "", "v1", "configmaps", namespace,
                                                  "jane", authenticated, 1, lw, &err),
                     0);
}

/* Lists page by page through both sources and asserts every page is the same List. */
static size_t same_pages(const struct ck_list_watch *a, const struct ck_list_watch *b,
                         const char *selector, int64_t limit)
{
    char token[512] = "";
    size_t items = 0, pages = 0;
    do {
        struct ck_list_options opts = {
            .label_selector = selector, .limit = limit, .continue_token = token[0] ? token : NULL};
        json_t *la = NULL, *lb = NULL;
        struct ck_err err = {0};
        assert_int_equal(a->list(a->ctx, &opts, &la, &err), 0);
        assert_int_equal(b->list(b->ctx, &opts, &lb, &err), 0);
        if (!json_equal(la, lb)) {
            char *ta = json_dumps(la, JSON_COMPACT), *tb = json_dumps(lb, JSON_COMPACT);
            fail_msg("in-process %s\n  REST %s", ta, tb);
        }
        items += json_array_size(json_object_get(la, "items"));
        const char *next =
            json_string_value(json_object_get(json_object_get(la, "metadata"), "continue"));
        snprintf(token, sizeof(token), "%s", next ? next : "");
        json_decref(la);
        json_decref(lb);
        pages++;
    } while (token[0]);
    assert_true(limit == 0 || pages > 1 || items <= (size_t)limit);
    return items;
}

static void test_list_pages_and_selectors(void **state)
{
    struct fixture *f = *state;
    create(f, "a1", "a");
    create(f, "a2", "a");
    create(f, "b1", "b");
    create(f, "a3", "a");
    create(f, "b2", "b");
    struct ck_list_watch in = {0};
    jane_in_process(f, "default", &in);
    struct ck_rest_list_watch rest;
    ck_rest_list_watch_init(&rest, f->jane, &configmaps, "default");
    /* kube-root-ca.crt may or may not exist yet: count ours through the selectors */
    assert_true(same_pages(&in, &rest.lw, NULL, 0) >= 5);
    assert_true(same_pages(&in, &rest.lw, NULL, 2) >= 5);
    assert_int_equal(same_pages(&in, &rest.lw, "app=a", 2), 3);
    assert_int_equal(same_pages(&in, &rest.lw, "app=b", 0), 2);
    assert_int_equal(same_pages(&in, &rest.lw, "app in (a,b),app!=a", 1), 2);
    /* a bad selector is the same 400 */
    struct ck_list_options bad = {.label_selector = "app in"};
    json_t *list = NULL;
    struct ck_err ein = {0}, erest = {0};
    int rin = in.list(in.ctx, &bad, &list, &ein);
    int rrest = rest.lw.list(rest.lw.ctx, &bad, &list, &erest);
    assert_int_equal(rin, rrest);
    assert_int_equal(ein.http_status, 400);
    assert_string_equal(ck_err_message(&ein), ck_err_message(&erest));
    ck_err_release(&ein);
    ck_err_release(&erest);
    ck_apiserver_list_watch_release(&in);
}

/* ---- watches ---------------------------------------------------------------- */

struct collected {
    json_t *events; /* [{"type", "object"}] */
    size_t want;    /* end the watch after this many */
};

static int collect(const char *type, json_t *object, void *arg)
{
    struct collected *c = arg;
    json_array_append_new(c->events, json_pack("{s:s, s:o}", "type", type, "object", object));
    return json_array_size(c->events) >= c->want ? 1 : 0;
}

/* The first want events of a watch from rv through lw (the watch must end with them). */
static json_t *events_from(const struct ck_list_watch *lw, const char *rv, const char *selector,
                           size_t want)
{
    struct collected c = {json_array(), want};
    struct ck_list_options opts = {.resource_version = rv,
                                   .label_selector = selector,
                                   .allow_watch_bookmarks = true,
                                   .timeout_seconds = 10};
    struct ck_err err = {0};
    int r = lw->watch(lw->ctx, &opts, collect, &c, NULL, &err);
    if (r != 1)
        fail_msg("watch from %s: %d (%s), %zu of %zu events", rv, r, ck_err_message(&err),
                 json_array_size(c.events), want);
    return c.events;
}

static void same_events(const struct ck_list_watch *a, const struct ck_list_watch *b,
                        const char *rv, const char *selector, size_t want, const char *types)
{
    json_t *ea = events_from(a, rv, selector, want), *eb = events_from(b, rv, selector, want);
    if (!json_equal(ea, eb)) {
        char *ta = json_dumps(ea, JSON_COMPACT), *tb = json_dumps(eb, JSON_COMPACT);
        fail_msg("in-process %s\n  REST %s", ta, tb);
    }
    char got[256] = "";
    size_t i;
    json_t *e;
    json_array_foreach(ea, i, e)
    {
        strcat(got, i ? " " : "");
        strcat(got, json_string_value(json_object_get(e, "type")));
    }
    assert_string_equal(got, types);
    json_decref(ea);
    json_decref(eb);
}

static void test_watch_events(void **state)
{
    struct fixture *f = *state;
    create(f, "w1", "a");
    struct ck_list_watch in = {0};
    jane_in_process(f, "default", &in);
    struct ck_rest_list_watch rest;
    ck_rest_list_watch_init(&rest, f->jane, &configmaps, "default");
    json_t *list = NULL;
    struct ck_err err = {0};
    struct ck_list_options all = {.label_selector = "app"};
    assert_int_equal(in.list(in.ctx, &all, &list, &err), 0);
    char rv[32];
    snprintf(
        rv, sizeof(rv), "%s",
        json_string_value(json_object_get(json_object_get(list, "metadata"), "resourceVersion")));
    json_decref(list);

    create(f, "w2", "a");
    update(f, "w1", "a", "2");
    update(f, "w2", "b", "2"); /* leaves app=a */
    struct ck_err derr = {0};
    assert_int_equal(ck_rest_delete(f->admin, &configmaps, "default", "w1", NULL, NULL, &derr), 0);
    update(f, "w2", "a", "3"); /* back in app=a */

    same_events(&in, &rest.lw, rv, "app", 5, "ADDED MODIFIED MODIFIED DELETED MODIFIED");
    same_events(&in, &rest.lw, rv, "app=a", 5, "ADDED MODIFIED DELETED DELETED ADDED");
    /* from "0": the current objects first, as ADDED */
    same_events(&in, &rest.lw, "0", "app", 1, "ADDED");
    ck_apiserver_list_watch_release(&in);
}

/* The metadata client's reads of jane's configmaps in default, as a list/watch source. */
static int md_list(void *ctx, const struct ck_list_options *opts, json_t **ret_list,
                   struct ck_err *reterr)
{
    return ck_metadata_list(ctx, &configmaps, "default", opts, ret_list, reterr);
}

static int md_watch(void *ctx, const struct ck_list_options *opts, ck_watch_func fn, void *arg,
                    const atomic_bool *stop, struct ck_err *reterr)
{
    return ck_metadata_watch(ctx, &configmaps, "default", opts, fn, arg, stop, reterr);
}

static void test_metadata(void **state)
{
    struct fixture *f = *state;
    create(f, "m1", "a");
    create(f, "m2", "b");
    struct ck_list_watch in = {0};
    struct ck_err err = {0};
    assert_int_equal(ck_apiserver_metadata_list_watch_init(f->server, "", "v1", "configmaps",
                                                           "default", "jane", authenticated, 1, &in,
                                                           &err),
                     0);
    struct ck_list_watch rest = {md_list, md_watch, f->jane};
    assert_int_equal(same_pages(&in, &rest, "app", 1), 2);
    json_t *list = NULL;
    struct ck_list_options all = {.label_selector = "app"};
    assert_int_equal(in.list(in.ctx, &all, &list, &err), 0);
    assert_string_equal(json_string_value(json_object_get(list, "kind")),
                        "PartialObjectMetadataList");
    json_t *item = json_array_get(json_object_get(list, "items"), 0);
    assert_string_equal(json_string_value(json_object_get(item, "kind")), "PartialObjectMetadata");
    assert_null(json_object_get(item, "data"));
    char rv[32];
    snprintf(
        rv, sizeof(rv), "%s",
        json_string_value(json_object_get(json_object_get(list, "metadata"), "resourceVersion")));
    json_decref(list);
    update(f, "m1", "a", "2");
    struct ck_err derr = {0};
    assert_int_equal(ck_rest_delete(f->admin, &configmaps, "default", "m2", NULL, NULL, &derr), 0);
    same_events(&in, &rest, rv, "app", 2, "MODIFIED DELETED");
    ck_apiserver_list_watch_release(&in);
}

static const char crontab_crd[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"crontabs.stable.example.com\"},"
    "\"spec\":{\"group\":\"stable.example.com\",\"scope\":\"Namespaced\","
    "\"names\":{\"plural\":\"crontabs\",\"kind\":\"CronTab\"},"
    "\"versions\":[{\"name\":\"v1beta1\",\"served\":true,\"storage\":false,"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
    "\"x-kubernetes-preserve-unknown-fields\":true}}},"
    "{\"name\":\"v1\",\"served\":true,\"storage\":true,"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
    "\"spec\":{\"type\":\"object\",\"properties\":{\"cronSpec\":{\"type\":\"string\"},"
    "\"replicas\":{\"type\":\"integer\",\"default\":1}}}}}}}]}}";

/* A custom resource in both its served versions, defaulted on read, as over HTTP. */
static void test_custom_resources(void **state)
{
    struct fixture *f = *state;
    static const struct ck_resource v1 = {"stable.example.com", "v1", "crontabs", true};
    static const struct ck_resource v1beta1 = {"stable.example.com", "v1beta1", "crontabs", true};
    static const char *const masters[] = {"system:masters", "system:authenticated"};
    struct ck_err err = {0};
    json_t *crd = json_loads(crontab_crd, 0, NULL);
    assert_non_null(crd);
    assert_int_equal(ck_rest_do(f->admin, "POST",
                                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd,
                                NULL, NULL, &err),
                     0);
    json_decref(crd);
    json_t *ct = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion",
                           "stable.example.com/v1", "kind", "CronTab", "metadata", "name", "ct1",
                           "labels", "app", "a", "spec", "cronSpec", "* * * * */5");
    int r = CK_ENOENT;
    for (int i = 0; i < 500 && r < 0; i++) { /* served once the CRD is established */
        ck_err_release(&err);
        r = ck_rest_create(f->admin, &v1, "default", ct, NULL, &err);
        if (r < 0) {
            struct timespec pause = {0, 10 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
    }
    assert_int_equal(r, 0);
    json_decref(ct);
    const struct ck_resource *versions[] = {&v1, &v1beta1};
    for (size_t i = 0; i < 2; i++) {
        struct ck_list_watch in = {0};
        assert_int_equal(ck_apiserver_list_watch_init(f->server, versions[i]->group,
                                                      versions[i]->version, "crontabs", "default",
                                                      "root", masters, 2, &in, &err),
                         0);
        struct ck_rest_list_watch rest;
        ck_rest_list_watch_init(&rest, f->admin, versions[i], "default");
        assert_int_equal(same_pages(&in, &rest.lw, NULL, 0), 1);
        json_t *events = events_from(&in, "0", NULL, 1);
        json_t *obj = json_object_get(json_array_get(events, 0), "object");
        char want[64];
        snprintf(want, sizeof(want), "stable.example.com/%s", versions[i]->version);
        assert_string_equal(json_string_value(json_object_get(obj, "apiVersion")), want);
        if (i == 0) /* the default of v1's schema, applied on read */
            assert_int_equal(
                json_integer_value(json_object_get(json_object_get(obj, "spec"), "replicas")), 1);
        json_decref(events);
        same_events(&in, &rest.lw, "0", NULL, 1, "ADDED");
        ck_apiserver_list_watch_release(&in);
    }
}

/*
 * Lists and watches through in and rest, both refused: 403 Forbidden with the same message, which
 * holds list_words (the list's) and watch_words (the watch's).
 */
static void same_refusal(const struct ck_list_watch *in, const struct ck_list_watch *rest,
                         const char *list_words, const char *watch_words)
{
    struct ck_list_options opts = {0};
    json_t *list = NULL;
    struct ck_err ein = {0}, erest = {0};
    assert_int_equal(in->list(in->ctx, &opts, &list, &ein), CK_EPERM);
    assert_int_equal(rest->list(rest->ctx, &opts, &list, &erest), CK_EPERM);
    assert_null(list);
    assert_int_equal(ein.http_status, 403);
    assert_string_equal(ein.reason, "Forbidden");
    assert_string_equal(ck_err_message(&ein), ck_err_message(&erest));
    if (!strstr(ck_err_message(&ein), list_words))
        fail_msg("no \"%s\" in \"%s\"", list_words, ck_err_message(&ein));
    ck_err_release(&ein);
    ck_err_release(&erest);
    struct collected c = {json_array(), 1};
    opts.resource_version = "1";
    assert_int_equal(in->watch(in->ctx, &opts, collect, &c, NULL, &ein), CK_EPERM);
    assert_int_equal(rest->watch(rest->ctx, &opts, collect, &c, NULL, &erest), CK_EPERM);
    assert_string_equal(ck_err_message(&ein), ck_err_message(&erest));
    if (!strstr(ck_err_message(&ein), watch_words))
        fail_msg("no \"%s\" in \"%s\"", watch_words, ck_err_message(&ein));
    assert_int_equal(json_array_size(c.events), 0);
    json_decref(c.events);
    ck_err_release(&ein);
    ck_err_release(&erest);
}

static void test_forbidden(void **state)
{
    struct fixture *f = *state;
    struct ck_list_watch in = {0};
    jane_in_process(f, "kube-system", &in);
    struct ck_rest_list_watch rest;
    ck_rest_list_watch_init(&rest, f->jane, &configmaps, "kube-system");
    same_refusal(&in, &rest.lw,
                 "configmaps is forbidden: User \"jane\" cannot list resource \"configmaps\" in "
                 "API group \"\" in the namespace \"kube-system\"",
                 "cannot watch resource \"configmaps\"");
    struct ck_list_options opts = {.resource_version = "1"};
    json_t *list = NULL;
    struct ck_err ein = {0};
    ck_apiserver_list_watch_release(&in);
    /* every namespace is not hers either; the controller manager may */
    jane_in_process(f, NULL, &in);
    assert_int_equal(in.list(in.ctx, &opts, &list, &ein), CK_EPERM);
    ck_err_release(&ein);
    ck_apiserver_list_watch_release(&in);
    struct ck_err err = {0};
    assert_int_equal(ck_apiserver_list_watch_init(f->server, "", "v1", "configmaps", NULL,
                                                  "system:kube-controller-manager", authenticated,
                                                  1, &in, &err),
                     0);
    opts.resource_version = NULL;
    assert_int_equal(in.list(in.ctx, &opts, &list, &err), 0);
    json_decref(list);
    ck_apiserver_list_watch_release(&in);
}

static void test_compacted(void **state)
{
    struct fixture *f = *state;
    create(f, "c1", "a");
    struct ck_list_watch in = {0};
    jane_in_process(f, "default", &in);
    json_t *list = NULL;
    struct ck_err err = {0};
    struct ck_list_options opts = {0};
    assert_int_equal(in.list(in.ctx, &opts, &list, &err), 0);
    char rv[32];
    snprintf(
        rv, sizeof(rv), "%s",
        json_string_value(json_object_get(json_object_get(list, "metadata"), "resourceVersion")));
    json_decref(list);
    ck_apiserver_list_watch_release(&in);
    create(f, "c2", "a");
    create(f, "c3", "a");

    /* history up to now goes while the server is down */
    stop(f);
    struct ck_store_options so = {.compaction_interval_ms = -1};
    struct ck_store *store = NULL;
    assert_int_equal(ck_store_open(f->store, &so, &store, &err), 0);
    int64_t current = 0;
    assert_int_equal(ck_store_revisions(store, &current, NULL, &err), 0);
    assert_int_equal(ck_store_compact(store, current, &err), 0);
    ck_store_close(store);
    start(f);

    jane_in_process(f, "default", &in);
    struct ck_rest_list_watch rest;
    ck_rest_list_watch_init(&rest, f->jane, &configmaps, "default");
    opts.resource_version = rv;
    struct collected c = {json_array(), 1};
    struct ck_err ein = {0}, erest = {0};
    assert_int_equal(in.watch(in.ctx, &opts, collect, &c, NULL, &ein), CK_ECOMPACTED);
    assert_int_equal(ein.http_status, 410);
    assert_string_equal(ein.reason, "Expired");
    assert_non_null(strstr(ck_err_message(&ein), "too old resource version"));
    /* the REST watch gets it as an ERROR event carrying the 410 Status */
    int r = rest.lw.watch(rest.lw.ctx, &opts, collect, &c, NULL, &erest);
    if (r == 1) {
        json_t *status = json_object_get(json_array_get(c.events, 0), "object");
        assert_int_equal(json_integer_value(json_object_get(status, "code")), 410);
        assert_string_equal(json_string_value(json_object_get(status, "message")),
                            ck_err_message(&ein));
    } else {
        assert_int_equal(r, CK_ECOMPACTED);
        assert_string_equal(ck_err_message(&erest), ck_err_message(&ein));
    }
    json_decref(c.events);
    ck_err_release(&ein);
    ck_err_release(&erest);
    ck_apiserver_list_watch_release(&in);
}

struct stopped {
    struct ck_list_watch *lw;
    atomic_bool stop;
    int r;
    int64_t ended_ns;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *watch_until_stopped(void *arg)
{
    struct stopped *s = arg;
    struct collected c = {json_array(), 1000};
    struct ck_list_options opts = {.resource_version = "0", .allow_watch_bookmarks = true};
    struct ck_err err = {0};
    s->r = s->lw->watch(s->lw->ctx, &opts, collect, &c, &s->stop, &err);
    s->ended_ns = now_ns();
    json_decref(c.events);
    return NULL;
}

static void test_stop_within_a_second(void **state)
{
    struct fixture *f = *state;
    struct ck_list_watch in = {0};
    jane_in_process(f, "default", &in);
    struct stopped s = {.lw = &in};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, watch_until_stopped, &s), 0);
    struct timespec pause = {0, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    create(f, "s1", "a"); /* an event while it runs */
    nanosleep(&pause, NULL);
    int64_t asked = now_ns();
    atomic_store(&s.stop, true);
    pthread_join(t, NULL);
    assert_int_equal(s.r, CK_ESHUTDOWN);
    assert_true(s.ended_ns - asked < 1500 * 1000 * 1000LL);
    ck_apiserver_list_watch_release(&in);
}

/* ---- an informer factory over the in-process source -------------------------- */

struct maker_calls {
    int made, released;
    struct fixture *f;
};

static int make(void *arg, const struct ck_resource *res, const char *namespace, bool metadata,
                struct ck_list_watch *ret_lw, struct ck_err *reterr)
{
    struct maker_calls *m = arg;
    m->made++;
    return (metadata ? ck_apiserver_metadata_list_watch_init : ck_apiserver_list_watch_init)(
        m->f->server, res->group, res->version, res->resource, namespace, "jane", authenticated, 1,
        ret_lw, reterr);
}

static void release(void *arg, struct ck_list_watch *lw)
{
    struct maker_calls *m = arg;
    m->released++;
    ck_apiserver_list_watch_release(lw);
}

static void test_factory_lists_and_watches_in_process(void **state)
{
    struct fixture *f = *state;
    create(f, "i1", "a");
    struct maker_calls m = {.f = f};
    struct ck_informer_factory *factory = NULL;
    struct ck_err err = {0};
    /* a client that could not list: what the informer sees comes in-process */
    assert_int_equal(ck_informer_factory_new(f->jane, "default", 0, NULL, &factory, &err), 0);
    struct ck_list_watch_maker maker = {make, release, &m};
    ck_informer_factory_set_list_watch(factory, &maker);
    struct ck_informer *inf = ck_informer_factory_for(factory, &configmaps);
    assert_non_null(inf);
    assert_ptr_equal(ck_informer_factory_for(factory, &configmaps), inf);
    assert_int_equal(m.made, 1);
    assert_int_equal(ck_informer_factory_start(factory, &err), 0);
    assert_true(ck_informer_factory_wait_for_sync(factory, CK_TIME_NEVER));
    const json_t *got = NULL;
    assert_int_equal(ck_indexer_get_by_key(ck_informer_indexer(inf), "default/i1", &got), 0);
    ck_cached_unref(got);
    create(f, "i2", "a"); /* comes through the in-process watch */
    int r = CK_ENOENT;
    for (int i = 0; i < 500 && r == CK_ENOENT; i++) {
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
        r = ck_indexer_get_by_key(ck_informer_indexer(inf), "default/i2", &got);
    }
    assert_int_equal(r, 0);
    assert_string_equal(json_string_value(json_object_get(got, "kind")), "ConfigMap");
    ck_cached_unref(got);
    struct ck_informer_stats stats;
    ck_informer_stats(inf, &stats);
    assert_true(stats.watch_events >= 1);
    /* a metadata informer through the same maker: PartialObjectMetadata, in-process */
    struct ck_metadata_informer *mi = NULL;
    assert_int_equal(
        ck_informer_factory_metadata_informer(factory, &configmaps, 0, NULL, &mi, &err), 0);
    assert_int_equal(m.made, 2);
    struct ck_informer *md = ck_metadata_informer_informer(mi);
    assert_int_equal(ck_informer_start(md, &err), 0);
    assert_true(ck_informer_wait_for_sync(md, CK_TIME_NEVER));
    assert_int_equal(ck_indexer_get_by_key(ck_informer_indexer(md), "default/i2", &got), 0);
    assert_string_equal(json_string_value(json_object_get(got, "kind")), "PartialObjectMetadata");
    assert_null(json_object_get(got, "data"));
    ck_cached_unref(got);
    mi = ck_metadata_informer_free(mi);
    assert_int_equal(m.released, 1);
    factory = ck_informer_factory_free(factory);
    assert_int_equal(m.released, 2);
}

static void create_pod(struct fixture *f, const char *name, const char *node)
{
    json_t *pod = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:[{s:s, s:s}]}}", "apiVersion", "v1",
                            "kind", "Pod", "metadata", "name", name, "spec", "nodeName", node,
                            "containers", "name", "c", "image", "busybox");
    struct ck_err err = {0};
    assert_int_equal(ck_rest_create(f->admin, &pods, "default", pod, NULL, &err), 0);
    json_decref(pod);
}

/* The in-process list and watch of res in namespace as system:node:n1, refused as over REST. */
static void node_refused(struct fixture *f, const struct ck_resource *res, const char *namespace,
                         const char *list_words, const char *watch_words)
{
    struct ck_list_watch in = {0};
    struct ck_err err = {0};
    assert_int_equal(ck_apiserver_list_watch_init(f->server, res->group, res->version,
                                                  res->resource, namespace, "system:node:n1",
                                                  node_groups, 2, &in, &err),
                     0);
    struct ck_rest_list_watch rest;
    ck_rest_list_watch_init(&rest, f->node, res, namespace);
    same_refusal(&in, &rest.lw, list_words, watch_words);
    ck_apiserver_list_watch_release(&in);
}

static void test_node(void **state)
{
    struct fixture *f = *state;
    create_pod(f, "on-n1", "n1");
    create_pod(f, "on-n2", "n2");
    create(f, "cm", "a");
    /* the pods bound to it, as the agent lists and watches them */
    struct ck_list_watch in = {0};
    struct ck_err err = {0};
    assert_int_equal(ck_apiserver_list_watch_init(f->server, "", "v1", "pods", NULL,
                                                  "system:node:n1", node_groups, 2, &in, &err),
                     0);
    struct ck_rest_list_watch rest;
    ck_rest_list_watch_init(&rest, f->node, &pods, NULL);
    struct ck_list_options opts = {.field_selector = "spec.nodeName=n1"};
    json_t *la = NULL, *lb = NULL;
    assert_int_equal(in.list(in.ctx, &opts, &la, &err), 0);
    assert_int_equal(rest.lw.list(rest.lw.ctx, &opts, &lb, &err), 0);
    assert_true(json_equal(la, lb));
    json_t *items = json_object_get(la, "items");
    assert_int_equal(json_array_size(items), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(items, 0), "metadata"), "name")),
                        "on-n1");
    json_decref(la);
    json_decref(lb);
    struct collected ca = {json_array(), 1}, cb = {json_array(), 1};
    opts.resource_version = "0";
    opts.timeout_seconds = 10;
    assert_int_equal(in.watch(in.ctx, &opts, collect, &ca, NULL, &err), 1);
    assert_int_equal(rest.lw.watch(rest.lw.ctx, &opts, collect, &cb, NULL, &err), 1);
    assert_true(json_equal(ca.events, cb.events));
    json_decref(ca.events);
    json_decref(cb.events);
    ck_apiserver_list_watch_release(&in);
    /* Secrets and ConfigMaps are the node authorizer's: never a whole collection */
    node_refused(f, &secrets, NULL,
                 "secrets is forbidden: User \"system:node:n1\" cannot list resource "
                 "\"secrets\" in API group \"\" at the cluster scope: no relationship found "
                 "between node 'n1' and this object",
                 "cannot watch resource \"secrets\" in API group \"\" at the cluster scope: no "
                 "relationship found");
    node_refused(f, &configmaps, "default",
                 "cannot list resource \"configmaps\" in API group \"\" in the namespace "
                 "\"default\": no relationship found between node 'n1' and this object",
                 "no relationship found between node 'n1' and this object");
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_list_pages_and_selectors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metadata, setup, teardown),
        cmocka_unit_test_setup_teardown(test_custom_resources, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forbidden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compacted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_within_a_second, setup, teardown),
        cmocka_unit_test_setup_teardown(test_factory_lists_and_watches_in_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node, setup, teardown),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return r;
}
