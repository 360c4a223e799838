/*
 * fake_client.c - the fake client of controller unit tests (client-go's
 * kubernetes/fake.Clientset: an object tracker, every call recorded as an action,
 * reactors that make chosen calls fail).
 *
 * A test seeds the objects the controller will read fresh from the "server", runs the
 * controller's sync, and then checks the list of actions: which verb on which resource,
 * namespace and name, with what body. Scripts (ck_fake_client_fail) stand in for
 * client-go's PrependReactor returning an error.
 *
 * The tracker is deliberately small: objects keyed by resource, namespace and name;
 * create names objects from generateName with a counter and gives them a uid and
 * resourceVersion; update and update_status compare resourceVersion when the body has
 * one (a mismatch is a conflict) and bump it; update_status replaces only status.
 *
 * Threading: one mutex around everything; controllers call it from several threads.
 *
 * Tested by tests/controllers/test_controller_utils.c, and used by every
 * controller unit test (test_replicaset_sync.c, test_controller_ref.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/controllers.h"
#include "ckube/internal/util.h"

struct script {
    const char *verb;
    const char *resource; /* NULL: any */
    int times;            /* < 0: forever */
    int code;
    char message[200];
};

struct ck_fake_client {
    pthread_mutex_t lock;
    struct ck__strmap objects; /* "resource/namespace/name" -> json_t * (owned) */
    struct ck_fake_action *actions;
    size_t n_actions, cap_actions;
    struct script *scripts;
    size_t n_scripts;
    unsigned long serial; /* generated names and uids */
};

int ck_fake_client_new(struct ck_fake_client **ret_fc, struct ck_err *reterr)
{
    struct ck_fake_client *fc = ck__calloc(1, sizeof(*fc));
    if (!fc)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    pthread_mutex_init(&fc->lock, NULL);
    *ret_fc = fc;
    return 0;
}

static void clear_actions(struct ck_fake_client *fc)
{
    for (size_t i = 0; i < fc->n_actions; i++) {
        free(fc->actions[i].resource);
        free(fc->actions[i].namespace);
        free(fc->actions[i].name);
        json_decref(fc->actions[i].body);
    }
    fc->n_actions = 0;
}

struct ck_fake_client *ck_fake_client_free(struct ck_fake_client *fc)
{
    if (!fc)
        return NULL;
    clear_actions(fc);
    free(fc->actions);
    free(fc->scripts);
    size_t bucket;
    for (struct ck__strmap_entry *e = ck__strmap_next(&fc->objects, NULL, &bucket); e;
         e = ck__strmap_next(&fc->objects, e, &bucket))
        json_decref(e->value);
    ck__strmap_release(&fc->objects);
    pthread_mutex_destroy(&fc->lock);
    free(fc);
    return NULL;
}

static void tracker_key(const struct ck_resource *res, const char *ns, const char *name, char *buf,
                        size_t size)
{
    snprintf(buf, size, "%s/%s/%s", res->resource, res->namespaced && ns ? ns : "",
             name ? name : "");
}

/* Records an action (best effort: a test that runs out of memory sees it missing). */
static void record(struct ck_fake_client *fc, const char *verb, const struct ck_resource *res,
                   const char *ns, const char *name, const json_t *body, int result)
{
    if (fc->n_actions == fc->cap_actions) {
        size_t cap = fc->cap_actions ? 2 * fc->cap_actions : 16;
        struct ck_fake_action *a = ck__realloc(fc->actions, cap * sizeof(*a));
        if (!a)
            return;
        fc->actions = a;
        fc->cap_actions = cap;
    }
    fc->actions[fc->n_actions++] = (struct ck_fake_action){
        .verb = verb,
        .resource = ck__strdup(res->resource),
        .namespace = ck__strdup(res->namespaced && ns ? ns : ""),
        .name = ck__strdup(name ? name : ""),
        .body = body ? ck__json_copy(body) : NULL,
        .result = result,
    };
}

/* The scripted failure for this call, if any: its code, with words in *reterr. */
static int scripted(struct ck_fake_client *fc, const char *verb, const struct ck_resource *res,
                    struct ck_err *reterr)
{
    for (size_t i = 0; i < fc->n_scripts; i++) {
        struct script *s = &fc->scripts[i];
        if (s->times == 0 || strcmp(s->verb, verb) != 0 ||
            (s->resource && strcmp(s->resource, res->resource) != 0))
            continue;
        if (s->times > 0)
            s->times--;
        return ck_err_set(reterr, s->code, "%s", s->message);
    }
    return 0;
}

int ck_fake_client_fail(struct ck_fake_client *fc, const char *verb, const struct ck_resource *res,
                        int times, int code, const char *message)
{
    pthread_mutex_lock(&fc->lock);
    struct script *s = ck__realloc(fc->scripts, (fc->n_scripts + 1) * sizeof(*s));
    if (s) {
        fc->scripts = s;
        s = &fc->scripts[fc->n_scripts++];
        *s = (struct script){
            .verb = verb, .resource = res ? res->resource : NULL, .times = times, .code = code};
        snprintf(s->message, sizeof(s->message), "%s", message ? message : "");
    }
    pthread_mutex_unlock(&fc->lock);
    return s ? 0 : CK_ENOMEM;
}

/* Stores obj (a reference the tracker takes) under its key, replacing what was there. */
static int store(struct ck_fake_client *fc, const struct ck_resource *res, json_t *obj,
                 struct ck_err *reterr)
{
    char key[512];
    tracker_key(res, ck__meta_str(obj, "namespace"), ck__meta_str(obj, "name"), key, sizeof(key));
    bool created;
    struct ck__strmap_entry *e = ck__strmap_put(&fc->objects, key, obj, &created);
    if (!e) {
        json_decref(obj);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    if (!created) {
        json_decref(e->value);
        e->value = obj;
    }
    return 0;
}

static json_t *lookup(struct ck_fake_client *fc, const struct ck_resource *res, const char *ns,
                      const char *name)
{
    char key[512];
    tracker_key(res, ns, name, key, sizeof(key));
    struct ck__strmap_entry *e = ck__strmap_find(&fc->objects, key);
    return e ? e->value : NULL;
}

int ck_fake_client_seed(struct ck_fake_client *fc, const struct ck_resource *res, const json_t *obj)
{
    json_t *copy = ck__json_copy(obj);
    if (!copy)
        return CK_ENOMEM;
    pthread_mutex_lock(&fc->lock);
    int r = store(fc, res, copy, NULL);
    pthread_mutex_unlock(&fc->lock);
    return r;
}

static void set_meta(json_t *obj, const char *field, const char *value)
{
    json_t *meta = json_object_get(obj, "metadata");
    if (!meta) {
        meta = json_object();
        json_object_set_new(obj, "metadata", meta);
    }
    json_object_set_new(meta, field, json_string(value));
}

static void bump_version(json_t *obj)
{
    char rv[32];
    snprintf(rv, sizeof(rv), "%lld", atoll(ck__meta_str(obj, "resourceVersion") ?: "0") + 1);
    set_meta(obj, "resourceVersion", rv);
}

static int answer(const json_t *obj, json_t **ret_obj, struct ck_err *reterr)
{
    if (ret_obj && !(*ret_obj = ck__json_copy(obj)))
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    return 0;
}

static int fake_get(void *data, const struct ck_resource *res, const char *ns, const char *name,
                    json_t **ret_obj, struct ck_err *reterr)
{
    struct ck_fake_client *fc = data;
    pthread_mutex_lock(&fc->lock);
    int r = scripted(fc, "get", res, reterr);
    const json_t *obj = r == 0 ? lookup(fc, res, ns, name) : NULL;
    if (r == 0 && !obj)
        r = ck_err_set(reterr, CK_ENOENT, "%s \"%s\" not found", res->resource, name);
    if (r == 0)
        r = answer(obj, ret_obj, reterr);
    record(fc, "get", res, ns, name, NULL, r);
    pthread_mutex_unlock(&fc->lock);
    return r;
}

static int fake_create(void *data, const struct ck_resource *res, const char *ns, const json_t *obj,
                       json_t **ret_obj, struct ck_err *reterr)
{
    struct ck_fake_client *fc = data;
    pthread_mutex_lock(&fc->lock);
    json_t *copy = NULL;
    char name[300];
    snprintf(name, sizeof(name), "%s", ck__meta_str(obj, "name") ?: ck__meta_str(obj, "generateName") ?: "");
    int r = scripted(fc, "create", res, reterr);
    if (r == 0 && !(copy = ck__json_copy(obj)))
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r == 0) {
        unsigned long n = ++fc->serial;
        if (!ck__meta_str(copy, "name")) {
            snprintf(name, sizeof(name), "%s%lu", ck__meta_str(obj, "generateName") ?: "", n);
            set_meta(copy, "name", name);
        }
        if (res->namespaced && ns)
            set_meta(copy, "namespace", ns);
        if (!ck__meta_str(copy, "uid")) {
            char uid[32];
            snprintf(uid, sizeof(uid), "fake-uid-%lu", n);
            set_meta(copy, "uid", uid);
        }
        set_meta(copy, "resourceVersion", "1");
        if (lookup(fc, res, ns, name))
            r = ck_err_set(reterr, CK_EEXIST, "%s \"%s\" already exists", res->resource, name);
    }
    if (r == 0)
        r = answer(copy, ret_obj, reterr);
    if (r == 0) {
        r = store(fc, res, copy, reterr);
        copy = NULL;
        if (r < 0 && ret_obj) /* a failed call leaves its output alone, as ck_rest's do */
            *ret_obj = (json_decref(*ret_obj), NULL);
    }
    json_decref(copy);
    record(fc, "create", res, ns, name, obj, r);
    pthread_mutex_unlock(&fc->lock);
    return r;
}

/* update and update_status: whole replaces the object, else only its status. */
static int fake_put(struct ck_fake_client *fc, const char *verb, bool whole,
                    const struct ck_resource *res, const char *ns, const json_t *obj,
                    json_t **ret_obj, struct ck_err *reterr)
{
    pthread_mutex_lock(&fc->lock);
    const char *name = ck__meta_str(obj, "name");
    int r = scripted(fc, verb, res, reterr);
    json_t *have = r == 0 ? lookup(fc, res, ns, name) : NULL, *next = NULL;
    const char *want_rv = ck__meta_str(obj, "resourceVersion");
    if (r == 0 && !have)
        r = ck_err_set(reterr, CK_ENOENT, "%s \"%s\" not found", res->resource, name ?: "");
    else if (r == 0 && want_rv && strcmp(want_rv, ck__meta_str(have, "resourceVersion") ?: "") != 0)
        r = ck_err_set(reterr, CK_ECONFLICT,
                       "Operation cannot be fulfilled on %s \"%s\": the object has been "
                       "modified; please apply your changes to the latest version and try again",
                       res->resource, name);
    if (r == 0) {
        next = ck__json_copy(whole ? obj : have);
        const json_t *status = json_object_get(obj, "status");
        if (next && !whole && status)
            json_object_set_new(next, "status", ck__json_copy(status));
        if (next) {
            set_meta(next, "resourceVersion", ck__meta_str(have, "resourceVersion") ?: "0");
            bump_version(next);
        }
        r = next ? answer(next, ret_obj, reterr) : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    if (r == 0) {
        r = store(fc, res, next, reterr);
        if (r < 0 && ret_obj) /* a failed call leaves its output alone, as ck_rest's do */
            *ret_obj = (json_decref(*ret_obj), NULL);
    } else {
        json_decref(next);
    }
    record(fc, verb, res, ns, name, obj, r);
    pthread_mutex_unlock(&fc->lock);
    return r;
}

static int fake_update(void *data, const struct ck_resource *res, const char *ns, const json_t *obj,
                       json_t **ret_obj, struct ck_err *reterr)
{
    return fake_put(data, "update", true, res, ns, obj, ret_obj, reterr);
}

static int fake_update_status(void *data, const struct ck_resource *res, const char *ns,
                              const json_t *obj, json_t **ret_obj, struct ck_err *reterr)
{
    return fake_put(data, "update-status", false, res, ns, obj, ret_obj, reterr);
}

static int fake_patch(void *data, const struct ck_resource *res, const char *ns, const char *name,
                      const char *subresource, const char *patch_type, const json_t *patch,
                      json_t **ret_obj, struct ck_err *reterr)
{
    (void)subresource, (void)patch_type;
    struct ck_fake_client *fc = data;
    pthread_mutex_lock(&fc->lock);
    int r = scripted(fc, "patch", res, reterr);
    const json_t *have = r == 0 ? lookup(fc, res, ns, name) : NULL;
    if (r == 0 && have)
        r = answer(have, ret_obj, reterr);
    else if (r == 0 && ret_obj)
        *ret_obj = NULL;
    record(fc, "patch", res, ns, name, patch, r);
    pthread_mutex_unlock(&fc->lock);
    return r;
}

static int fake_delete(void *data, const struct ck_resource *res, const char *ns, const char *name,
                       const json_t *options, json_t **ret_obj, struct ck_err *reterr)
{
    struct ck_fake_client *fc = data;
    pthread_mutex_lock(&fc->lock);
    int r = scripted(fc, "delete", res, reterr);
    char key[512];
    tracker_key(res, ns, name, key, sizeof(key));
    struct ck__strmap_entry *e = r == 0 ? ck__strmap_find(&fc->objects, key) : NULL;
    if (r == 0 && !e)
        r = ck_err_set(reterr, CK_ENOENT, "%s \"%s\" not found", res->resource, name);
    if (r == 0) {
        json_t *gone = e->value;
        ck__strmap_remove_entry(&fc->objects, e);
        r = answer(gone, ret_obj, reterr);
        json_decref(gone);
    }
    record(fc, "delete", res, ns, name, options, r);
    pthread_mutex_unlock(&fc->lock);
    return r;
}

static const struct ck_ctl_client_ops fake_ops = {
    .get = fake_get,
    .create = fake_create,
    .update = fake_update,
    .update_status = fake_update_status,
    .patch = fake_patch,
    .delete = fake_delete,
};

void ck_fake_client_iface(struct ck_fake_client *fc, struct ck_ctl_client *ret_client)
{
    ret_client->ops = &fake_ops;
    ret_client->data = fc;
}

const struct ck_fake_action *ck_fake_client_actions(struct ck_fake_client *fc, size_t *ret_n)
{
    pthread_mutex_lock(&fc->lock);
    const struct ck_fake_action *a = fc->actions;
    *ret_n = fc->n_actions;
    pthread_mutex_unlock(&fc->lock);
    return a;
}

size_t ck_fake_client_count(struct ck_fake_client *fc, const char *verb,
                            const struct ck_resource *res)
{
    size_t n = 0;
    pthread_mutex_lock(&fc->lock);
    for (size_t i = 0; i < fc->n_actions; i++)
        n += strcmp(fc->actions[i].verb, verb) == 0 &&
             (!res || strcmp(fc->actions[i].resource ?: "", res->resource) == 0);
    pthread_mutex_unlock(&fc->lock);
    return n;
}

void ck_fake_client_clear_actions(struct ck_fake_client *fc)
{
    pthread_mutex_lock(&fc->lock);
    clear_actions(fc);
    pthread_mutex_unlock(&fc->lock);
}
