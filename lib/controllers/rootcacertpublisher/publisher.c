/*
 * publisher.c - the root CA certificate publisher (kubernetes
 * pkg/controller/certificates/rootcacertpublisher/publisher.go): a queue of namespace
 * names fed by the namespaces informer (every add, and an update to an Active
 * namespace) and the configmaps informer (a `kube-root-ca.crt` updated or deleted
 * enqueues its namespace), and one worker, as kube-controller-manager runs it, that
 * makes the namespace's `kube-root-ca.crt` ConfigMap hold exactly {ca.crt: the CA} with
 * the kubernetes.io/description annotation. Pods read it through the kube-api-access-*
 * projected volume the ServiceAccount admission plugin gives them. A failed write is
 * retried with the queue's exponential backoff (5 ms doubling to 1000 s).
 *
 * The CA is the one the controller manager's client verifies the API server with (its
 * kubeconfig's, as kube-controller-manager uses when --root-ca-file is not given).
 *
 * Threading: the runner's worker; the caches are the informers' (thread-safe).
 *
 * Tested by tests/controllers/test_rootcacertpublisher.c (fakes) and
 * tests/e2e/test_serviceaccount.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/rest.h"
#include "ckube/rootcacertpublisher.h"

/* What the kubernetes.io/description annotation says the ConfigMap is for. */
#define DESCRIPTION                                                                                \
    "The cluster's CA bundle, to verify the API server at its in-cluster addresses (the "          \
    "kubernetes Service's IP, kubernetes.default.svc). Other uses are not guaranteed."

struct ck_root_ca_publisher {
    struct ck_ctl_client client;
    struct ck_indexer *namespaces, *configmaps;
    char *root_ca;
    const struct ck_resource *cm_res;
    struct ck_wq *queue;
    struct ck_controller ctl;
    struct ck_runner *runner;
};

/* Whether cm's data is exactly {ca.crt: ca} and its description is set. */
static bool up_to_date(const json_t *cm, const char *ca)
{
    const json_t *data = json_object_get(cm, "data");
    const char *have = json_string_value(json_object_get(data, CK_ROOT_CA_KEY));
    const char *description = json_string_value(
        json_object_get(json_object_get(json_object_get(cm, "metadata"), "annotations"),
                        CK_ROOT_CA_DESCRIPTION_ANNOTATION));
    return json_object_size(data) == 1 && have && strcmp(have, ca) == 0 && description &&
           *description;
}

/* A create refused because the namespace is gone or going: nothing to retry. */
static bool namespace_gone(int r, const struct ck_err *err)
{
    return r == CK_ENOENT || (err->http_status == 403 &&
                              strstr(ck_err_message(err), "because it is being terminated"));
}

int ck_root_ca_publisher_sync(struct ck_root_ca_publisher *c, const char *name,
                              struct ck_err *reterr)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", name, CK_ROOT_CA_CONFIGMAP);
    const json_t *cached = NULL;
    struct ck_err err = {0};
    int r;
    if (ck_indexer_get_by_key(c->configmaps, key, &cached) < 0) {
        json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
                                "ConfigMap", "metadata", "name", CK_ROOT_CA_CONFIGMAP,
                                "annotations", CK_ROOT_CA_DESCRIPTION_ANNOTATION, DESCRIPTION,
                                "data", CK_ROOT_CA_KEY, c->root_ca);
        if (!obj)
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        r = ck_ctl_create(&c->client, c->cm_res, name, obj, NULL, &err);
        json_decref(obj);
        if (r < 0 && namespace_gone(r, &err))
            r = 0;
    } else {
        if (up_to_date(cached, c->root_ca)) {
            ck_cached_unref(cached);
            return 0;
        }
        /* a copy: the cache's object is shared and immutable */
        json_t *obj = json_deep_copy(cached);
        ck_cached_unref(cached);
        json_t *meta = obj ? json_object_get(obj, "metadata") : NULL;
        json_t *annotations = json_object_get(meta, "annotations");
        if (meta && !json_is_object(annotations)) {
            json_object_set_new(meta, "annotations", json_object());
            annotations = json_object_get(meta, "annotations");
        }
        if (!annotations ||
            json_object_set_new(annotations, CK_ROOT_CA_DESCRIPTION_ANNOTATION,
                                json_string(DESCRIPTION)) < 0 ||
            json_object_set_new(obj, "data", json_pack("{s:s}", CK_ROOT_CA_KEY, c->root_ca)) < 0) {
            json_decref(obj);
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        }
        json_object_del(obj, "binaryData");
        r = ck_ctl_update(&c->client, c->cm_res, name, obj, NULL, &err);
        json_decref(obj);
    }
    if (r < 0)
        ck_err_set(reterr, r, "syncing configmap %s/%s: %s", name, CK_ROOT_CA_CONFIGMAP,
                   ck_err_message(&err));
    ck_err_release(&err);
    return r;
}

static int sync_key(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    return ck_root_ca_publisher_sync(ctl->data, key, reterr);
}

struct ck_wq *ck_root_ca_publisher_queue(struct ck_root_ca_publisher *c)
{
    return c->queue;
}

int ck_root_ca_publisher_new(const struct ck_root_ca_publisher_config *config,
                             struct ck_root_ca_publisher **ret_c, struct ck_err *reterr)
{
    if (!config->client.ops || !config->namespaces || !config->configmaps || !config->root_ca)
        return ck_err_set(reterr, CK_EINVAL, "root CA publisher: missing interfaces");
    const struct ck_resource *cm_res = ck_controller_resource("", "v1", "configmaps");
    if (!cm_res)
        return ck_err_set(reterr, CK_ENOENT, "root CA publisher: no configmaps kind");
    struct ck_root_ca_publisher *c = ck__calloc(1, sizeof(*c));
    if (!c || !(c->root_ca = strdup(config->root_ca))) {
        free(c);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    c->client = config->client;
    c->namespaces = config->namespaces;
    c->configmaps = config->configmaps;
    c->cm_res = cm_res;
    struct ck_wq_options o = {.name = "root_ca_cert_publisher",
                              .clock = config->clock,
                              .limiter = ck_rl_exponential_new(5 * CK_MSEC, 1000 * CK_SEC)};
    int r = o.limiter ? ck_wq_new(&o, &c->queue, reterr)
                      : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r < 0) {
        ck_rl_free(o.limiter);
        free(c->root_ca);
        free(c);
        return r;
    }
    c->ctl = (struct ck_controller){
        .name = "root-ca-certificate-publisher", .sync = sync_key, .data = c, .queue = c->queue};
    *ret_c = c;
    return 0;
}

struct ck_root_ca_publisher *ck_root_ca_publisher_free(struct ck_root_ca_publisher *c)
{
    if (!c)
        return NULL;
    if (c->runner)
        ck_runner_stop(c->runner);
    ck_wq_free(c->queue);
    free(c->root_ca);
    free(c);
    return NULL;
}

/* ---- the controller manager's row --------------------------------------------------- */

static void ns_added(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    const char *name = ck__meta_str(obj, "name");
    if (name)
        ck_wq_add(((struct ck_root_ca_publisher *)arg)->queue, name);
}

static void ns_updated(const json_t *old_obj, const json_t *new_obj, void *arg)
{
    (void)old_obj;
    const char *phase =
        json_string_value(json_object_get(json_object_get(new_obj, "status"), "phase"));
    if (phase && strcmp(phase, "Active") == 0)
        ns_added(new_obj, false, arg);
}

/* A kube-root-ca.crt ConfigMap changed or went: its namespace is synced again. */
static void cm_changed(const json_t *obj, void *arg)
{
    const char *name = ck__meta_str(obj, "name");
    const char *ns = ck__meta_str(obj, "namespace");
    if (name && ns && strcmp(name, CK_ROOT_CA_CONFIGMAP) == 0)
        ck_wq_add(((struct ck_root_ca_publisher *)arg)->queue, ns);
}

static void cm_updated(const json_t *old_obj, const json_t *new_obj, void *arg)
{
    (void)old_obj;
    cm_changed(new_obj, arg);
}

static void cm_deleted(const json_t *obj, const struct ck_deleted_final_state_unknown *tombstone,
                       void *arg)
{
    (void)tombstone;
    cm_changed(obj, arg);
}

struct publisher_state {
    struct ck_informer *ns_inf, *cm_inf;
    struct ck_root_ca_publisher *c;
};

int ck_root_ca_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                             struct ck_err *reterr)
{
    const struct ck_resource *ns_res = ck_controller_resource("", "v1", "namespaces");
    const struct ck_resource *cm_res = ck_controller_resource("", "v1", "configmaps");
    struct publisher_state *s = ck__calloc(1, sizeof(*s));
    if (!s)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    s->ns_inf = ns_res ? ck_informer_factory_for(ctx->factory, ns_res) : NULL;
    s->cm_inf = cm_res ? ck_informer_factory_for(ctx->factory, cm_res) : NULL;
    int r = 0;
    if (!s->ns_inf || !s->cm_inf)
        r = ck_err_set(reterr, CK_ENOMEM, "root CA publisher: no informers");
    char *ca = NULL;
    if (r == 0) {
        struct ck_err err = {0};
        int got = ck_rest_ca_pem(ctx->client, &ca, &err);
        if (got == CK_ENOENT) /* a server without TLS: published empty, as Kubernetes would */
            CK_LOGI("root CA publisher: the client has no CA; publishing an empty one");
        else if (got < 0)
            r = ck_err_set(reterr, got, "root CA publisher: %s", ck_err_message(&err));
        ck_err_release(&err);
    }
    struct ck_root_ca_publisher_config config = {0};
    if (r == 0) {
        ck_ctl_client_init_rest(&config.client, ctx->client);
        config.namespaces = ck_informer_indexer(s->ns_inf);
        config.configmaps = ck_informer_indexer(s->cm_inf);
        config.root_ca = ca ? ca : "";
        r = ck_root_ca_publisher_new(&config, &s->c, reterr);
    }
    free(ca);
    if (r == 0) {
        struct ck_event_handler nh = {.on_add = ns_added, .on_update = ns_updated, .arg = s->c};
        struct ck_event_handler ch = {
            .on_update = cm_updated, .on_delete = cm_deleted, .arg = s->c};
        r = ck_informer_add_handler(s->ns_inf, &nh, 0, reterr);
        if (r == 0)
            r = ck_informer_add_handler(s->cm_inf, &ch, 0, reterr);
    }
    if (r < 0) {
        ck_root_ca_publisher_free(s->c);
        free(s);
        return r;
    }
    *ret_state = s;
    return 0;
}

int ck_root_ca_manager_run(void *state, int workers, struct ck_err *reterr)
{
    struct publisher_state *s = state;
    (void)workers; /* kube-controller-manager runs this controller with one worker */
    if (!ck_informer_wait_for_sync(s->ns_inf, CK_TIME_NEVER) ||
        !ck_informer_wait_for_sync(s->cm_inf, CK_TIME_NEVER))
        return ck_err_set(reterr, CK_ESHUTDOWN, "root CA publisher: informer stopped");
    return ck_runner_start(&s->c->ctl, 1, &s->c->runner, reterr);
}

void ck_root_ca_manager_stop(void *state)
{
    struct publisher_state *s = state;
    if (!s)
        return;
    ck_root_ca_publisher_free(s->c);
    free(s);
}
