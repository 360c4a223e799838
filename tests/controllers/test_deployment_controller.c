/*
 * test_deployment_controller.c - the Deployment controller's sync and handlers on fakes:
 * caches the test fills (Deployments, ReplicaSets, pods behind listers), the fake client
 * and a pinned wall clock; no server, informers or workers. Each test builds a world,
 * runs syncs and checks the actions the client recorded, as kubernetes'
 * deployment_controller_test.go does with its fixture (expectCreateRSAction,
 * expectUpdateRSAction, expectUpdateDeploymentStatusAction ...).
 *
 * Between syncs, catch_up() plays the informers: what the controller wrote to the fake
 * server is read back into the caches. The ReplicaSet controller is played by
 * settle(): every ReplicaSet's status becomes its spec, all replicas ready and available.
 */
#include "cktest.h"

#include <inttypes.h>

#include "../../lib/controllers/deployment/deployment.h"
#include "ckube/deployment.h"
#include "ckube/internal/util.h"
#include "fixtures.h"

#define NOW "2026-03-01T12:00:00Z"

struct env {
    struct fx_cache ds, rss, pods;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck_deploy_controller *dc;
    const struct ck_resource *ds_res, *rss_res, *pods_res;
    int64_t now;
};

static int64_t env_now(void *arg)
{
    return ((struct env *)arg)->now;
}

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    fx_cache_init(&e->ds);
    fx_cache_init(&e->rss);
    fx_cache_init(&e->pods);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    assert_int_equal(ck__deploy_parse_time(NOW, &e->now), 0);
    struct ck_deploy_controller_deps deps = {
        .client = &e->client,
        .deployments = &e->ds.lister,
        .replicasets = &e->rss.lister,
        .pods = &e->pods.lister,
        .now = env_now,
        .now_arg = e,
    };
    assert_int_equal(ck_deploy_controller_new_with(&deps, &e->dc, NULL), 0);
    e->ds_res = ck_controller_resource("apps", "v1", "deployments");
    e->rss_res = ck_controller_resource("apps", "v1", "replicasets");
    e->pods_res = ck_controller_resource("", "v1", "pods");
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_deploy_controller_free(e->dc);
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->ds);
    fx_cache_release(&e->rss);
    fx_cache_release(&e->pods);
    free(e);
    return 0;
}

/* ---- the world ------------------------------------------------------------------ */

/* A RollingUpdate Deployment web selecting app=web, image nginx:<tag>, generation 1. */
static json_t *deployment(int replicas, int max_surge, int max_unavailable, const char *tag)
{
    char image[64];
    snprintf(image, sizeof(image), "nginx:%s", tag);
    json_t *d =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:i}, s:{s:i, s:{s:s, s:{s:i, s:i}}, "
                  "s:{s:{s:s}}, s:{s:{s:{s:s}}, s:{s:[{s:s, s:s}]}}}, s:{}}",
                  "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", "web",
                  "namespace", "default", "uid", "d-uid", "resourceVersion", "1", "generation", 1,
                  "spec", "replicas", replicas, "strategy", "type", "RollingUpdate",
                  "rollingUpdate", "maxSurge", max_surge, "maxUnavailable", max_unavailable,
                  "selector", "matchLabels", "app", "web", "template", "metadata", "labels", "app",
                  "web", "spec", "containers", "name", "web", "image", image, "status");
    assert_non_null(d);
    return d;
}

static json_t *spec_of(json_t *obj)
{
    return json_object_get(obj, "spec");
}

/* A ReplicaSet of d's template at `tag`, owned by d, with revision, size and creation time. */
static json_t *owned_rs(const json_t *d, bool owned, const char *name, const char *tag,
                        int replicas, const char *revision, const char *created)
{
    json_t *t = json_deep_copy(json_object_get(json_object_get(d, "spec"), "template"));
    char image[64];
    snprintf(image, sizeof(image), "nginx:%s", tag);
    json_object_set_new(json_array_get(json_object_get(spec_of(t), "containers"), 0), "image",
                        json_string(image));
    const char *hash = name + strlen("web-");
    json_object_set_new(json_object_get(json_object_get(t, "metadata"), "labels"),
                        "pod-template-hash", json_string(hash));
    json_t *rs =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:i, s:s, s:{s:s, s:s}, s:{s:s}}, s:{s:i, "
                  "s:{s:{s:s, s:s}}, s:o}, s:{s:i, s:i, s:i, s:i}}",
                  "apiVersion", "apps/v1", "kind", "ReplicaSet", "metadata", "name", name,
                  "namespace", "default", "uid", name, "resourceVersion", "1", "generation", 1,
                  "creationTimestamp", created, "labels", "app", "web", "pod-template-hash", hash,
                  "annotations", CK_DEPLOY_REVISION_ANNOTATION, revision, "spec", "replicas",
                  replicas, "selector", "matchLabels", "app", "web", "pod-template-hash", hash,
                  "template", t, "status", "replicas", replicas, "readyReplicas", replicas,
                  "availableReplicas", replicas, "observedGeneration", 1);
    assert_non_null(rs);
    if (owned)
        json_object_set_new(json_object_get(rs, "metadata"), "ownerReferences",
                            json_pack("[o]", ck_controller_ref_new(d, "apps/v1", "Deployment")));
    return rs;
}

/* Puts obj on the fake server and in cache (taking the caller's reference). */
static void put(struct env *e, struct fx_cache *cache, const struct ck_resource *res, json_t *obj)
{
    struct ck_err err = {0};
    json_t *have = NULL;
    if (ck_ctl_get(&e->client, res, fx_meta(obj, "namespace"), fx_meta(obj, "name"), &have, &err) ==
        0) {
        json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion",
                            json_string(fx_meta(have, "resourceVersion")));
        assert_int_equal(ck_ctl_update(&e->client, res, fx_meta(obj, "namespace"), obj, NULL, &err),
                         0);
        json_decref(have);
        have = NULL;
        assert_int_equal(ck_ctl_get(&e->client, res, fx_meta(obj, "namespace"),
                                    fx_meta(obj, "name"), &have, &err),
                         0);
        json_decref(obj);
        obj = have;
    } else {
        assert_int_equal(ck_fake_client_seed(e->fc, res, obj), 0);
    }
    fx_cache_add(cache, obj);
    ck_fake_client_clear_actions(e->fc);
}

/* The informers catch up: what the controller wrote goes into the caches. */
static void catch_up(struct env *e)
{
    size_t n = 0;
    const struct ck_fake_action *a = ck_fake_client_actions(e->fc, &n);
    json_t *todo = json_array();
    for (size_t i = 0; i < n; i++) {
        if (a[i].result < 0 || strcmp(a[i].verb, "get") == 0 || strcmp(a[i].verb, "patch") == 0)
            continue;
        /* a Deployment's status update carries its annotations (the revision) too */
        json_t *ann = json_object_get(json_object_get(a[i].body, "metadata"), "annotations");
        json_array_append_new(
            todo, json_pack("{s:s, s:s, s:s, s:s, s:O?}", "verb", a[i].verb, "resource",
                            a[i].resource, "namespace", a[i].namespace, "name", a[i].name,
                            "annotations", strcmp(a[i].verb, "update-status") == 0 ? ann : NULL));
    }
    size_t i;
    json_t *t;
    json_array_foreach(todo, i, t)
    {
        const char *res_name = json_string_value(json_object_get(t, "resource"));
        const char *ns = json_string_value(json_object_get(t, "namespace"));
        const char *name = json_string_value(json_object_get(t, "name"));
        struct fx_cache *cache = strcmp(res_name, "deployments") == 0   ? &e->ds
                                 : strcmp(res_name, "replicasets") == 0 ? &e->rss
                                                                        : NULL;
        const struct ck_resource *res =
            strcmp(res_name, "deployments") == 0 ? e->ds_res : e->rss_res;
        if (!cache)
            continue;
        char key[256];
        snprintf(key, sizeof(key), "%s/%s", ns, name);
        if (strcmp(json_string_value(json_object_get(t, "verb")), "delete") == 0) {
            ck_indexer_delete_key(cache->ix, key, NULL);
            continue;
        }
        json_t *obj = NULL;
        if (ck_ctl_get(&e->client, res, ns, name, &obj, NULL) < 0)
            continue;
        json_t *ann = json_object_get(t, "annotations");
        if (json_is_object(ann)) {
            json_object_set(json_object_get(obj, "metadata"), "annotations", ann);
            ck_fake_client_seed(e->fc, res, obj);
        }
        fx_cache_add(cache, obj);
    }
    json_decref(todo);
    ck_fake_client_clear_actions(e->fc);
}

/* The ReplicaSet controller's part, done at once: every RS's pods exist, ready and available. */
static void settle(struct env *e)
{
    struct ck_obj_list all = {0};
    assert_int_equal(ck_lister_list(&e->rss.lister, "default", NULL, &all, NULL), 0);
    for (size_t i = 0; i < all.n; i++) {
        json_t *rs = json_deep_copy(all.items[i]);
        json_int_t n = json_integer_value(json_object_get(spec_of(rs), "replicas"));
        json_object_set_new(rs, "status",
                            json_pack("{s:I, s:I, s:I, s:I}", "replicas", n, "readyReplicas", n,
                                      "availableReplicas", n, "observedGeneration", (json_int_t)1));
        put(e, &e->rss, e->rss_res, rs);
    }
    ck_obj_list_release(&all);
}

static const json_t *cached(struct fx_cache *cache, const char *name)
{
    const json_t *obj = NULL;
    if (ck_lister_get(&cache->lister, "default", name, &obj) < 0)
        return NULL;
    ck_cached_unref(obj); /* the cache keeps it alive until replaced */
    return obj;
}

static json_int_t int_at(const json_t *obj, const char *a, const char *b)
{
    return json_integer_value(json_object_get(json_object_get(obj, a), b));
}

static const char *annotation(const json_t *obj, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"), key));
}

static int sync(struct env *e)
{
    struct ck_err err = {0};
    int r = ck_deploy_controller_sync(e->dc, "default/web", &err);
    if (r < 0)
        print_message("sync: %s\n", err.msg);
    return r;
}

/* How many events with this reason and message were recorded. */
static size_t events(struct env *e, const char *reason, const char *message)
{
    size_t n = 0, count = 0;
    const struct ck_fake_action *a = ck_fake_client_actions(e->fc, &n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(a[i].verb, "create") != 0 || strcmp(a[i].resource, "events") != 0)
            continue;
        const char *r = json_string_value(json_object_get(a[i].body, "reason"));
        const char *m = json_string_value(json_object_get(a[i].body, "message"));
        if (r && strcmp(r, reason) == 0 && (!message || (m && strcmp(m, message) == 0)))
            count++;
    }
    return count;
}

/* The last status written for the Deployment, or NULL. */
static const json_t *last_status_write(struct env *e)
{
    const struct ck_fake_action *last = NULL;
    for (size_t i = 0;; i++) {
        const struct ck_fake_action *a = fx_action(e->fc, "update-status", "deployments", i);
        if (!a)
            break;
        last = a;
    }
    return last ? last->body : NULL;
}

static const json_t *condition(const json_t *d, const char *type)
{
    return ck__deploy_condition_get(json_object_get(d, "status"), type);
}

static const char *cond_reason(const json_t *d, const char *type)
{
    return json_string_value(json_object_get(condition(d, type), "reason"));
}

/* The ReplicaSets in the cache: sum of spec.replicas, and how many there are. */
static int32_t total_spec(struct env *e, size_t *ret_n)
{
    struct ck_obj_list all = {0};
    assert_int_equal(ck_lister_list(&e->rss.lister, "default", NULL, &all, NULL), 0);
    int32_t sum = 0;
    for (size_t i = 0; i < all.n; i++)
        sum += (int32_t)int_at(all.items[i], "spec", "replicas");
    if (ret_n)
        *ret_n = all.n;
    ck_obj_list_release(&all);
    return sum;
}

/* Changes the cached Deployment with fn (a new generation, as the server would give it). */
static void edit(struct env *e, void (*fn)(json_t *d, const void *arg), const void *arg)
{
    json_t *d = json_deep_copy(cached(&e->ds, "web"));
    fn(d, arg);
    json_object_set_new(json_object_get(d, "metadata"), "generation",
                        json_integer(int_at(d, "metadata", "generation") + 1));
    put(e, &e->ds, e->ds_res, d);
}

static void set_image(json_t *d, const void *arg)
{
    char image[64];
    snprintf(image, sizeof(image), "nginx:%s", (const char *)arg);
    json_t *c = json_array_get(
        json_object_get(json_object_get(json_object_get(spec_of(d), "template"), "spec"),
                        "containers"),
        0);
    json_object_set_new(c, "image", json_string(image));
}

static void set_replicas(json_t *d, const void *arg)
{
    json_object_set_new(spec_of(d), "replicas", json_integer(*(const int *)arg));
}

static void set_min_ready(json_t *d, const void *arg)
{
    json_object_set_new(spec_of(d), "minReadySeconds", json_integer(*(const int *)arg));
}

/* The cached Deployment rolled out and complete: created, pods ready, status written. */
static void bring_up(struct env *e)
{
    assert_int_equal(sync(e), 0);
    catch_up(e);
    settle(e);
    assert_int_equal(sync(e), 0);
    catch_up(e);
}

/* ---- tests --------------------------------------------------------------------- */

static void test_create_makes_new_rs_with_hash_and_annotations(void **state)
{
    struct env *e = *state;
    json_t *d = deployment(3, 1, 0, "1.27");
    json_object_set_new(spec_of(d), "progressDeadlineSeconds", json_integer(600));
    json_object_set_new(json_object_get(d, "metadata"), "annotations",
                        json_pack("{s:s}", CK_DEPLOY_CHANGE_CAUSE_ANNOTATION, "first"));
    put(e, &e->ds, e->ds_res, d);
    assert_int_equal(sync(e), 0);

    assert_int_equal(ck_fake_client_count(e->fc, "create", e->rss_res), 1);
    const struct ck_fake_action *a = fx_action(e->fc, "create", "replicasets", 0);
    const char *hash = json_string_value(json_object_get(
        json_object_get(json_object_get(a->body, "metadata"), "labels"), "pod-template-hash"));
    assert_non_null(hash);
    char name[64];
    snprintf(name, sizeof(name), "web-%s", hash);
    assert_string_equal(a->name, name);
    /* the hash is on the selector and the template too */
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(spec_of(a->body), "selector"), "matchLabels"),
            "pod-template-hash")),
        hash);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(
                json_object_get(json_object_get(spec_of(a->body), "template"), "metadata"),
                "labels"),
            "pod-template-hash")),
        hash);
    assert_int_equal(int_at(a->body, "spec", "replicas"), 3);
    assert_string_equal(annotation(a->body, CK_DEPLOY_REVISION_ANNOTATION), "1");
    assert_string_equal(annotation(a->body, CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION), "3");
    assert_string_equal(annotation(a->body, CK_DEPLOY_MAX_REPLICAS_ANNOTATION), "4");
    assert_string_equal(annotation(a->body, CK_DEPLOY_CHANGE_CAUSE_ANNOTATION), "first");
    const json_t *ref = ck_controller_ref(a->body);
    assert_string_equal(json_string_value(json_object_get(ref, "uid")), "d-uid");
    assert_string_equal(json_string_value(json_object_get(ref, "kind")), "Deployment");
    assert_true(json_is_true(json_object_get(ref, "blockOwnerDeletion")));
    char msg[128];
    snprintf(msg, sizeof(msg), "Scaled up replica set %s from 0 to 3", name);
    assert_int_equal(events(e, "ScalingReplicaSet", msg), 1);

    /* the Deployment takes revision 1 and NewReplicaSetCreated */
    const json_t *st = last_status_write(e);
    assert_non_null(st);
    assert_string_equal(annotation(st, CK_DEPLOY_REVISION_ANNOTATION), "1");
    /* no pods reported yet: no progress to report over NewReplicaSetCreated */
    assert_string_equal(cond_reason(st, "Progressing"), "NewReplicaSetCreated");
    assert_string_equal(cond_reason(st, "Available"), "MinimumReplicasUnavailable");
    assert_int_equal(int_at(st, "status", "updatedReplicas"), 0);
    assert_int_equal(int_at(st, "status", "observedGeneration"), 1);

    /* an unchanged template keeps its ReplicaSet: no second create */
    catch_up(e);
    assert_int_equal(sync(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->rss_res), 0);

    /* pods ready: complete, available */
    catch_up(e);
    settle(e);
    assert_int_equal(sync(e), 0);
    st = last_status_write(e);
    assert_non_null(st);
    assert_int_equal(int_at(st, "status", "availableReplicas"), 3);
    assert_int_equal(int_at(st, "status", "readyReplicas"), 3);
    assert_int_equal(int_at(st, "status", "unavailableReplicas"), 0);
    assert_string_equal(cond_reason(st, "Available"), "MinimumReplicasAvailable");
    assert_string_equal(cond_reason(st, "Progressing"), "NewReplicaSetAvailable");

    /* minReadySeconds is not part of the template: the same ReplicaSet takes it */
    catch_up(e);
    int five = 5;
    edit(e, set_min_ready, &five);
    assert_int_equal(sync(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->rss_res), 0);
    const struct ck_fake_action *u = fx_action(e->fc, "update", "replicasets", 0);
    assert_non_null(u);
    assert_string_equal(u->name, name);
    assert_int_equal(int_at(u->body, "spec", "minReadySeconds"), 5);
    assert_int_equal(int_at(u->body, "spec", "replicas"), 3);
}

/* Rolls web out to completion, checking the bounds after every sync; returns the syncs. */
static int roll_to_completion(struct env *e, int replicas, int surge, int unavailable,
                              const char *new_name_prefix)
{
    (void)new_name_prefix;
    int steps = 0;
    for (; steps < 40; steps++) {
        assert_int_equal(sync(e), 0);
        catch_up(e);
        size_t n = 0;
        int32_t total = total_spec(e, &n);
        assert_true(total <= replicas + surge);
        assert_true(total >= replicas - unavailable);
        settle(e);
        const json_t *d = cached(&e->ds, "web");
        if (int_at(d, "status", "updatedReplicas") == replicas &&
            int_at(d, "status", "replicas") == replicas &&
            int_at(d, "status", "availableReplicas") == replicas)
            break;
    }
    assert_true(steps < 40);
    return steps;
}

static void test_template_change_rolls_within_surge_and_unavailable(void **state)
{
    struct env *e = *state;
    put(e, &e->ds, e->ds_res, deployment(4, 1, 1, "1.27"));
    bring_up(e);

    edit(e, set_image, "1.28");
    assert_int_equal(sync(e), 0);
    /* the second ReplicaSet, at the surge; the old one down by maxUnavailable */
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->rss_res), 1);
    const struct ck_fake_action *c = fx_action(e->fc, "create", "replicasets", 0);
    assert_int_equal(int_at(c->body, "spec", "replicas"), 1);
    assert_string_equal(annotation(c->body, CK_DEPLOY_REVISION_ANNOTATION), "2");
    const struct ck_fake_action *u = fx_action(e->fc, "update", "replicasets", 0);
    assert_non_null(u);
    assert_int_equal(int_at(u->body, "spec", "replicas"), 3);
    assert_int_equal(events(e, "ScalingReplicaSet", NULL), 2);
    catch_up(e);
    size_t n = 0;
    assert_int_equal(total_spec(e, &n), 4);
    assert_int_equal(n, 2);
    settle(e);

    roll_to_completion(e, 4, 1, 1, "web-");
    /* the old ReplicaSet is kept at 0 (default history limit unset here) */
    struct ck_obj_list all = {0};
    assert_int_equal(ck_lister_list(&e->rss.lister, "default", NULL, &all, NULL), 0);
    assert_int_equal(all.n, 2);
    for (size_t i = 0; i < all.n; i++) {
        const char *rev = annotation(all.items[i], CK_DEPLOY_REVISION_ANNOTATION);
        assert_int_equal(int_at(all.items[i], "spec", "replicas"), strcmp(rev, "2") == 0 ? 4 : 0);
    }
    ck_obj_list_release(&all);
    assert_string_equal(annotation(cached(&e->ds, "web"), CK_DEPLOY_REVISION_ANNOTATION), "2");
}

static void test_surge_only_rollout_never_drops_below_replicas(void **state)
{
    struct env *e = *state;
    put(e, &e->ds, e->ds_res, deployment(3, 1, 0, "1.27"));
    assert_int_equal(sync(e), 0);
    catch_up(e);
    settle(e);
    edit(e, set_image, "1.28");
    roll_to_completion(e, 3, 1, 0, "web-");
}

static void set_recreate(json_t *d, const void *arg)
{
    (void)arg;
    json_object_set_new(spec_of(d), "strategy", json_pack("{s:s}", "type", "Recreate"));
}

static void test_recreate_scales_old_down_waits_for_pods_then_creates(void **state)
{
    struct env *e = *state;
    json_t *d = deployment(3, 0, 0, "1.28");
    set_recreate(d, NULL);
    json_t *old = owned_rs(d, true, "web-old", "1.27", 3, "1", "2026-01-01T00:00:00Z");
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof(name), "web-old-%d", i);
        json_t *pod = fx_pod("default", name, "web", old);
        fx_pod_running(pod, "node", "2026-01-01T00:00:00Z");
        put(e, &e->pods, e->pods_res, pod);
    }
    put(e, &e->rss, e->rss_res, old);
    put(e, &e->ds, e->ds_res, d);

    /* 1: the old ReplicaSet goes to 0, nothing is created */
    assert_int_equal(sync(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->rss_res), 0);
    const struct ck_fake_action *u = fx_action(e->fc, "update", "replicasets", 0);
    assert_int_equal(int_at(u->body, "spec", "replicas"), 0);
    assert_int_equal(events(e, "ScalingReplicaSet", "Scaled down replica set web-old from 3 to 0"),
                     1);
    catch_up(e);
    settle(e); /* status.replicas 0, but the pods are still in the cache */

    /* 2: old pods still there: wait */
    assert_int_equal(sync(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->rss_res), 0);
    catch_up(e);

    /* 3: the pods are gone: the new ReplicaSet at full size */
    for (int i = 0; i < 3; i++) {
        char key[32];
        snprintf(key, sizeof(key), "default/web-old-%d", i);
        assert_int_equal(ck_indexer_delete_key(e->pods.ix, key, NULL), 0);
    }
    assert_int_equal(sync(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->rss_res), 1);
    const struct ck_fake_action *c = fx_action(e->fc, "create", "replicasets", 0);
    assert_int_equal(int_at(c->body, "spec", "replicas"), 3);
    assert_string_equal(annotation(c->body, CK_DEPLOY_REVISION_ANNOTATION), "2");
}

static void test_recreate_pod_delete_enqueues_the_deployment(void **state)
{
    struct env *e = *state;
    json_t *d = deployment(1, 0, 0, "1.28");
    set_recreate(d, NULL);
    json_t *rs = owned_rs(d, true, "web-old", "1.27", 0, "1", "2026-01-01T00:00:00Z");
    json_t *pod = fx_pod("default", "p", "web", rs);
    put(e, &e->rss, e->rss_res, rs);
    put(e, &e->ds, e->ds_res, d);
    struct ck_event_handler hd, hrs, hp;
    ck_deploy_controller_handlers(e->dc, &hd, &hrs, &hp);
    hp.on_delete(pod, NULL, hp.arg);
    assert_true(ck_wq_contains(ck_deploy_controller_queue(e->dc), "default/web"));
    json_decref(pod);
}

static void set_paused(json_t *d, const void *arg)
{
    json_object_set_new(spec_of(d), "paused", json_boolean(*(const bool *)arg));
}

static void test_paused_scales_but_does_not_roll_out(void **state)
{
    struct env *e = *state;
    json_t *d = deployment(2, 1, 0, "1.27");
    json_object_set_new(spec_of(d), "progressDeadlineSeconds", json_integer(600));
    put(e, &e->ds, e->ds_res, d);
    bring_up(e);

    bool yes = true, no = false;
    edit(e, set_paused, &yes);
    edit(e, set_image, "1.28");
    assert_int_equal(sync(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->rss_res), 0);
    const json_t *st = last_status_write(e);
    assert_non_null(st);
    assert_string_equal(cond_reason(st, "Progressing"), "DeploymentPaused");
    catch_up(e);

    int five = 5;
    edit(e, set_replicas, &five);
    assert_int_equal(sync(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->rss_res), 0);
    const struct ck_fake_action *u = fx_action(e->fc, "update", "replicasets", 0);
    assert_non_null(u);
    assert_int_equal(int_at(u->body, "spec", "replicas"), 5);
    assert_string_equal(annotation(u->body, CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION), "5");
    catch_up(e);
    settle(e);

    /* resumed: the condition says so, and the rollout starts */
    edit(e, set_paused, &no);
    assert_int_equal(sync(e), 0);
    st = fx_action(e->fc, "update-status", "deployments", 0)->body;
    assert_string_equal(cond_reason(st, "Progressing"), "DeploymentResumed");
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->rss_res), 1);
}

static void test_scaling_mid_rollout_is_proportional(void **state)
{
    struct env *e = *state;
    json_t *d = deployment(10, 3, 2, "1.28");
    json_t *old = owned_rs(d, true, "web-old", "1.27", 8, "1", "2026-01-01T00:00:00Z");
    /* the new ReplicaSet: d's template plus its hash */
    json_t *new_rs = owned_rs(d, true, "web-new", "1.28", 5, "2", "2026-01-02T00:00:00Z");
    const char *keys[] = {CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION, CK_DEPLOY_MAX_REPLICAS_ANNOTATION};
    const char *vals[] = {"10", "13"};
    for (int i = 0; i < 2; i++) {
        json_object_set_new(json_object_get(json_object_get(old, "metadata"), "annotations"),
                            keys[i], json_string(vals[i]));
        json_object_set_new(json_object_get(json_object_get(new_rs, "metadata"), "annotations"),
                            keys[i], json_string(vals[i]));
    }
    put(e, &e->rss, e->rss_res, old);
    put(e, &e->rss, e->rss_res, new_rs);
    json_object_set_new(spec_of(d), "replicas", json_integer(20));
    put(e, &e->ds, e->ds_res, d);

    assert_int_equal(sync(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->rss_res), 0);
    catch_up(e);
    /* 23 allowed, 13 there: old 8*23/13 = 14, new 5*23/13 = 9 */
    assert_int_equal(int_at(cached(&e->rss, "web-old"), "spec", "replicas"), 14);
    assert_int_equal(int_at(cached(&e->rss, "web-new"), "spec", "replicas"), 9);
    assert_string_equal(
        annotation(cached(&e->rss, "web-old"), CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION), "20");
    assert_string_equal(annotation(cached(&e->rss, "web-new"), CK_DEPLOY_MAX_REPLICAS_ANNOTATION),
                        "23");
}

static void test_rollback_by_template_reuses_the_old_rs(void **state)
{
    struct env *e = *state;
    /* kubectl rollout undo put the 1.27 template back */
    json_t *d = deployment(2, 1, 0, "1.27");
    put(e, &e->rss, e->rss_res, owned_rs(d, true, "web-a", "1.27", 0, "1", "2026-01-01T00:00:00Z"));
    put(e, &e->rss, e->rss_res, owned_rs(d, true, "web-b", "1.28", 2, "2", "2026-01-02T00:00:00Z"));
    put(e, &e->ds, e->ds_res, d);

    assert_int_equal(sync(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->rss_res), 0);
    const struct ck_fake_action *u = fx_action(e->fc, "update", "replicasets", 0);
    assert_string_equal(u->name, "web-a");
    assert_string_equal(annotation(u->body, CK_DEPLOY_REVISION_ANNOTATION), "3");
    assert_string_equal(annotation(u->body, CK_DEPLOY_REVISION_HISTORY_ANNOTATION), "1");
    catch_up(e);
    settle(e);
    roll_to_completion(e, 2, 1, 0, "web-a");
    assert_int_equal(int_at(cached(&e->rss, "web-a"), "spec", "replicas"), 2);
    assert_int_equal(int_at(cached(&e->rss, "web-b"), "spec", "replicas"), 0);
    assert_string_equal(annotation(cached(&e->ds, "web"), CK_DEPLOY_REVISION_ANNOTATION), "3");
}

static void set_rollback_to(json_t *d, const void *arg)
{
    json_t *m = json_object_get(d, "metadata");
    if (!json_object_get(m, "annotations"))
        json_object_set_new(m, "annotations", json_object());
    json_object_set_new(json_object_get(m, "annotations"), CK_DEPLOY_ROLLBACK_TO_ANNOTATION,
                        json_string(arg));
}

/* The deprecated rollback annotation: the template of that revision, the annotation gone. */
static void test_rollback_annotation_takes_the_revision_template(void **state)
{
    struct env *e = *state;
    json_t *d = deployment(2, 1, 0, "1.28");
    put(e, &e->rss, e->rss_res, owned_rs(d, true, "web-a", "1.27", 0, "1", "2026-01-01T00:00:00Z"));
    put(e, &e->rss, e->rss_res, owned_rs(d, true, "web-b", "1.28", 2, "2", "2026-01-02T00:00:00Z"));
    json_object_set_new(json_object_get(d, "metadata"), "annotations",
                        json_pack("{s:s}", CK_DEPLOY_ROLLBACK_TO_ANNOTATION, "1"));
    put(e, &e->ds, e->ds_res, d);

    assert_int_equal(sync(e), 0);
    const struct ck_fake_action *u = fx_action(e->fc, "update", "deployments", 0);
    assert_non_null(u);
    assert_null(annotation(u->body, CK_DEPLOY_ROLLBACK_TO_ANNOTATION));
    const json_t *c = json_array_get(
        json_object_get(json_object_get(json_object_get(spec_of(u->body), "template"), "spec"),
                        "containers"),
        0);
    assert_string_equal(json_string_value(json_object_get(c, "image")), "nginx:1.27");
    assert_int_equal(
        events(e, "DeploymentRollback", "Rolled back deployment \"web\" to revision 1"), 1);

    /* a revision that does not exist: a warning, and the annotation still goes */
    catch_up(e);
    edit(e, set_rollback_to, "7");
    assert_int_equal(sync(e), 0);
    assert_int_equal(events(e, "DeploymentRollbackRevisionNotFound",
                            "Unable to find the revision to rollback to."),
                     1);
    u = fx_action(e->fc, "update", "deployments", 0);
    assert_non_null(u);
    assert_null(annotation(u->body, CK_DEPLOY_ROLLBACK_TO_ANNOTATION));
}

static void test_history_beyond_the_limit_is_deleted_oldest_first(void **state)
{
    struct env *e = *state;
    json_t *d = deployment(2, 1, 0, "1.28");
    json_object_set_new(spec_of(d), "revisionHistoryLimit", json_integer(1));
    put(e, &e->rss, e->rss_res, owned_rs(d, true, "web-r1", "1.1", 0, "1", "2026-01-01T00:00:00Z"));
    put(e, &e->rss, e->rss_res, owned_rs(d, true, "web-r2", "1.2", 0, "2", "2026-01-02T00:00:00Z"));
    put(e, &e->rss, e->rss_res, owned_rs(d, true, "web-r3", "1.3", 0, "3", "2026-01-03T00:00:00Z"));
    put(e, &e->rss, e->rss_res,
        owned_rs(d, true, "web-r4", "1.28", 2, "4", "2026-01-04T00:00:00Z"));
    json_object_set_new(d, "status",
                        json_pack("{s:i, s:i, s:i, s:i, s:i}", "observedGeneration", 1, "replicas",
                                  2, "updatedReplicas", 2, "readyReplicas", 2, "availableReplicas",
                                  2));
    put(e, &e->ds, e->ds_res, d);

    assert_int_equal(sync(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->rss_res), 2);
    assert_string_equal(fx_action(e->fc, "delete", "replicasets", 0)->name, "web-r1");
    assert_string_equal(fx_action(e->fc, "delete", "replicasets", 1)->name, "web-r2");
}

static void test_progress_deadline_exceeded_and_requeue(void **state)
{
    struct env *e = *state;
    json_t *d = deployment(2, 1, 0, "1.27");
    json_object_set_new(spec_of(d), "progressDeadlineSeconds", json_integer(10));
    put(e, &e->ds, e->ds_res, d);
    assert_int_equal(sync(e), 0);
    catch_up(e);
    /* pods never become ready; a sync before the deadline asks to look again at it */
    assert_int_equal(sync(e), 0);
    catch_up(e);
    assert_int_equal(sync(e), 0);
    assert_true(ck_wq_delayed_len(ck_deploy_controller_queue(e->dc)) >= 1);
    catch_up(e);

    e->now += 11 * CK_DEPLOY_NS_PER_SEC;
    assert_int_equal(sync(e), 0);
    const json_t *st = last_status_write(e);
    assert_non_null(st);
    assert_string_equal(cond_reason(st, "Progressing"), "ProgressDeadlineExceeded");
    assert_string_equal(json_string_value(json_object_get(condition(st, "Progressing"), "status")),
                        "False");
}

static void test_adopts_matching_orphan_and_releases_mismatch(void **state)
{
    struct env *e = *state;
    json_t *d = deployment(2, 1, 0, "1.27");
    /* an orphan with d's template (the hash label aside): adopted and used as the new RS */
    json_t *orphan = owned_rs(d, false, "web-orphan", "1.27", 2, "1", "2026-01-01T00:00:00Z");
    /* ours, but relabelled: released */
    json_t *stray = owned_rs(d, true, "web-stray", "1.26", 0, "1", "2026-01-01T00:00:00Z");
    json_object_set_new(json_object_get(json_object_get(stray, "metadata"), "labels"), "app",
                        json_string("other"));
    put(e, &e->rss, e->rss_res, orphan);
    put(e, &e->rss, e->rss_res, stray);
    put(e, &e->ds, e->ds_res, d);

    assert_int_equal(sync(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->rss_res), 0);
    bool adopted = false, released = false;
    for (size_t i = 0; fx_action(e->fc, "update", "replicasets", i); i++) {
        const struct ck_fake_action *a = fx_action(e->fc, "update", "replicasets", i);
        const json_t *ref = ck_controller_ref(a->body);
        if (strcmp(a->name, "web-orphan") == 0 && ref &&
            strcmp(json_string_value(json_object_get(ref, "uid")), "d-uid") == 0)
            adopted = true;
        if (strcmp(a->name, "web-stray") == 0 && !ref)
            released = true;
    }
    assert_true(adopted);
    assert_true(released);
}

static void test_selecting_all_is_refused_with_an_event(void **state)
{
    struct env *e = *state;
    json_t *d = deployment(2, 1, 0, "1.27");
    json_object_set_new(spec_of(d), "selector", json_object());
    put(e, &e->ds, e->ds_res, d);
    assert_int_equal(sync(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->rss_res), 0);
    assert_int_equal(events(e, "SelectingAll", NULL), 1);
    const json_t *st = last_status_write(e);
    assert_non_null(st);
    assert_int_equal(int_at(st, "status", "observedGeneration"), 1);
}

static void test_hash_collision_bumps_collision_count(void **state)
{
    struct env *e = *state;
    json_t *d = deployment(1, 1, 0, "1.27");
    put(e, &e->ds, e->ds_res, d);
    /* someone else's ReplicaSet already has the name the controller will use */
    assert_int_equal(sync(e), 0);
    const struct ck_fake_action *c = fx_action(e->fc, "create", "replicasets", 0);
    char name[64];
    snprintf(name, sizeof(name), "%s", c->name);
    /* start again with a different ReplicaSet under that name */
    teardown(state);
    setup(state);
    e = *state;
    d = deployment(1, 1, 0, "1.27");
    json_t *squatter = owned_rs(d, false, name, "0.1", 0, "1", "2026-01-01T00:00:00Z");
    put(e, &e->ds, e->ds_res, d);
    json_object_set_new(json_object_get(json_object_get(squatter, "metadata"), "labels"), "app",
                        json_string("squatter"));
    put(e, &e->rss, e->rss_res, squatter);
    assert_int_not_equal(sync(e), 0);
    const json_t *st = last_status_write(e);
    assert_non_null(st);
    assert_int_equal(int_at(st, "status", "collisionCount"), 1);
    catch_up(e);
    /* the next hash differs: a ReplicaSet under another name */
    assert_int_equal(sync(e), 0);
    c = fx_action(e->fc, "create", "replicasets", 0);
    assert_non_null(c);
    assert_string_not_equal(c->name, name);
}

static void test_rs_events_reach_the_owner_or_matching_deployments(void **state)
{
    struct env *e = *state;
    json_t *d = deployment(1, 1, 0, "1.27");
    put(e, &e->ds, e->ds_res, json_incref(d));
    struct ck_event_handler hd, hrs, hp;
    ck_deploy_controller_handlers(e->dc, &hd, &hrs, &hp);
    struct ck_wq *q = ck_deploy_controller_queue(e->dc);

    json_t *owned = owned_rs(d, true, "web-x", "1.27", 1, "1", "2026-01-01T00:00:00Z");
    hrs.on_add(owned, false, hrs.arg);
    assert_true(ck_wq_contains(q, "default/web"));
    const char *key;
    assert_int_equal(ck_wq_try_get(q, &key), 0);
    ck_wq_done(q, key);

    json_t *orphan = owned_rs(d, false, "web-y", "1.27", 1, "1", "2026-01-01T00:00:00Z");
    hrs.on_add(orphan, false, hrs.arg);
    assert_true(ck_wq_contains(q, "default/web"));
    assert_int_equal(ck_wq_try_get(q, &key), 0);
    ck_wq_done(q, key);

    /* owned by a Deployment we do not know (another uid): nobody */
    json_t *foreign = owned_rs(d, true, "web-z", "1.27", 1, "1", "2026-01-01T00:00:00Z");
    json_object_set_new(
        json_array_get(json_object_get(json_object_get(foreign, "metadata"), "ownerReferences"), 0),
        "uid", json_string("other"));
    hrs.on_add(foreign, false, hrs.arg);
    assert_int_equal(ck_wq_len(q), 0);
    hrs.on_delete(owned, NULL, hrs.arg);
    assert_true(ck_wq_contains(q, "default/web"));
    json_decref(owned);
    json_decref(orphan);
    json_decref(foreign);
    json_decref(d);
}

/* One sync of a world (0: create, 1: rolling update in flight, 2: Recreate), failing allocation n.
 */
static int sync_failing_at(unsigned long n, int world, unsigned long *ret_made)
{
    void *state = NULL;
    setup(&state);
    struct env *e = state;
    json_t *d = deployment(4, 1, 1, "1.28");
    if (world == 2)
        set_recreate(d, NULL);
    if (world > 0) {
        json_t *old = owned_rs(d, true, "web-old", "1.27", 4, "1", "2026-01-01T00:00:00Z");
        json_t *pod = fx_pod("default", "p0", "web", old);
        put(e, &e->pods, e->pods_res, pod);
        put(e, &e->rss, e->rss_res, old);
        put(e, &e->rss, e->rss_res,
            owned_rs(d, false, "web-orphan", "1.26", 0, "1", "2026-01-01T00:00:00Z"));
    }
    put(e, &e->ds, e->ds_res, d);
    struct ck_err err = {0};
    ck__alloc_fail_at(n, false);
    int r = ck_deploy_controller_sync(e->dc, "default/web", &err);
    *ret_made = ck__alloc_fail_at(0, false);
    teardown(&state);
    return r;
}

/*
 * Every allocation of a sync (and of what it calls through the interfaces) fails in
 * turn: the sync returns 0 or CK_ENOMEM, never crashes, and leaks nothing (the sanitizer
 * checks at exit), until it runs with no failure at all.
 */
static void test_sync_survives_allocation_failures(void **state)
{
    (void)state;
    for (int w = 0; w < 3; w++) {
        unsigned long n = 1, made = 0;
        for (;; n++) {
            int r = sync_failing_at(n, w, &made);
            if (r != 0 && r != CK_ENOMEM)
                fail_msg("world %d, allocation %lu: sync returned %d", w, n, r);
            if (made < n)
                break; /* the nth allocation never came: the sync ran unhindered */
        }
        assert_true(n > 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_makes_new_rs_with_hash_and_annotations, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_template_change_rolls_within_surge_and_unavailable,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_surge_only_rollout_never_drops_below_replicas, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_recreate_scales_old_down_waits_for_pods_then_creates,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_recreate_pod_delete_enqueues_the_deployment, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_paused_scales_but_does_not_roll_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scaling_mid_rollout_is_proportional, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollback_by_template_reuses_the_old_rs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rollback_annotation_takes_the_revision_template, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_history_beyond_the_limit_is_deleted_oldest_first,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_progress_deadline_exceeded_and_requeue, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_adopts_matching_orphan_and_releases_mismatch, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_selecting_all_is_refused_with_an_event, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_hash_collision_bumps_collision_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rs_events_reach_the_owner_or_matching_deployments,
                                        setup, teardown),
        cmocka_unit_test(test_sync_survives_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
