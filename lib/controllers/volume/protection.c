/*
 * protection.c - the pvc-protection and pv-protection controllers (kubernetes
 * pkg/controller/volume/pvcprotection/pvc_protection_controller.go and
 * pkg/controller/volume/pvprotection/pv_protection_controller.go).
 *
 * The StorageObjectInUseProtection admission plugin puts kubernetes.io/pvc-protection
 * on every new claim and kubernetes.io/pv-protection on every new volume; these
 * controllers take the finalizer away once the object being deleted is no longer in
 * use, so the deletion completes: a claim is in use while a pod scheduled to a node and
 * not Succeeded or Failed names it in a persistentVolumeClaim volume (or an ephemeral
 * volume whose claim is <pod>-<volume>); a volume while its phase is Bound. An object
 * not being deleted that lacks the finalizer (created before the plugin ran) gets it.
 * Pods' events queue the claims being deleted that they name, when the pod goes or
 * finishes.
 *
 * One file, one struct for both: they differ in the resource, the finalizer and the
 * in-use test.
 *
 * Threading: the runner syncs a key on one worker at a time; handlers run on the
 * informers' threads; the state is read-only after creation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "ckube/persistentvolume.h"

struct ck_protection_controller {
    enum ck_protected what;
    struct ck_ctl_client client;
    struct ck_lister objects, pods;
    const struct ck_resource *res;
    struct ck_informer *infs[2];
    struct ck_wq *queue;
    struct ck_controller ctl;
    struct ck_runner *runner;
};

static const char *finalizer_of(const struct ck_protection_controller *c)
{
    return c->what == CK_PROTECT_CLAIMS ? CK_PVC_PROTECTION_FINALIZER : CK_PV_PROTECTION_FINALIZER;
}

static bool has_finalizer(const json_t *obj, const char *finalizer)
{
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "finalizers"), i, f)
    {
        if (json_string_value(f) && strcmp(json_string_value(f), finalizer) == 0)
            return true;
    }
    return false;
}

static bool deleting(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") != NULL;
}

/* The claim a pod's volume names, written into buf (or NULL). */
static const char *volume_claim(const json_t *pod, const json_t *vol, char *buf, size_t size)
{
    const char *name = json_string_value(
        json_object_get(json_object_get(vol, "persistentVolumeClaim"), "claimName"));
    if (name)
        return name;
    if (!json_object_get(vol, "ephemeral"))
        return NULL;
    snprintf(buf, size, "%s-%s", ck__meta_str(pod, "name") ? ck__meta_str(pod, "name") : "",
             json_string_value(json_object_get(vol, "name"))
                 ? json_string_value(json_object_get(vol, "name"))
                 : "");
    return buf;
}

static bool pod_finished(const json_t *pod)
{
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    return phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

/* podUsesPVC: scheduled, not finished, and one of its volumes is the claim. */
static bool pod_uses(const json_t *pod, const char *claim)
{
    const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    if (!node || !*node || pod_finished(pod))
        return false;
    size_t i;
    const json_t *vol;
    char buf[512];
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, vol)
    {
        const char *name = volume_claim(pod, vol, buf, sizeof(buf));
        if (name && strcmp(name, claim) == 0)
            return true;
    }
    return false;
}

static bool in_use(struct ck_protection_controller *c, const json_t *obj)
{
    if (c->what == CK_PROTECT_VOLUMES) {
        const char *phase =
            json_string_value(json_object_get(json_object_get(obj, "status"), "phase"));
        return phase && strcmp(phase, "Bound") == 0;
    }
    struct ck_obj_list pods = {0};
    if (ck_lister_list(&c->pods, ck__meta_str(obj, "namespace"), NULL, &pods, NULL) < 0)
        return true; /* cannot tell: keep it */
    bool used = false;
    for (size_t i = 0; i < pods.n && !used; i++)
        used = pod_uses(pods.items[i], ck__meta_str(obj, "name"));
    ck_obj_list_release(&pods);
    return used;
}

static int write_finalizers(struct ck_protection_controller *c, const json_t *obj, bool add,
                            struct ck_err *reterr)
{
    json_t *copy = json_deep_copy(obj);
    json_t *meta = json_object_get(copy, "metadata");
    json_t *list = json_object_get(meta, "finalizers");
    const char *f = finalizer_of(c);
    if (add) {
        if (!json_is_array(list)) {
            list = json_array();
            json_object_set_new(meta, "finalizers", list);
        }
        json_array_append_new(list, json_string(f));
    } else {
        for (size_t i = json_array_size(list); i-- > 0;)
            if (json_string_value(json_array_get(list, i)) &&
                strcmp(json_string_value(json_array_get(list, i)), f) == 0)
                json_array_remove(list, i);
        if (json_array_size(list) == 0)
            json_object_del(meta, "finalizers");
    }
    const char *ns = ck__meta_str(copy, "namespace");
    int r = ck_ctl_update(&c->client, c->res, ns ? ns : "", copy, NULL, reterr);
    if (r == CK_ENOENT) { /* gone meanwhile: nothing to protect */
        ck_err_release(reterr);
        r = 0;
    }
    if (r == 0)
        CK_LOGV(3, "%s: %s finalizer %s %s", c->ctl.name, add ? "added" : "removed", f,
                ck__meta_str(obj, "name"));
    json_decref(copy);
    return r;
}

int ck_protection_controller_sync(struct ck_protection_controller *c, const char *key,
                                  struct ck_err *reterr)
{
    char *ns = NULL, *name = NULL;
    const json_t *obj = NULL;
    int r = ck_split_meta_namespace_key(key, &ns, &name, NULL);
    if (r == 0)
        r = ck_lister_get(&c->objects, ns ? ns : "", name, &obj);
    free(ns);
    free(name);
    if (r < 0)
        return 0;
    const char *f = finalizer_of(c);
    if (deleting(obj) && has_finalizer(obj, f)) {
        if (!in_use(c, obj))
            r = write_finalizers(c, obj, false, reterr);
    } else if (!deleting(obj) && !has_finalizer(obj, f)) {
        r = write_finalizers(c, obj, true, reterr);
    }
    ck_cached_unref(obj);
    return r;
}

/* ---- handlers ----------------------------------------------------------------------- */

static void object_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    struct ck_protection_controller *c = arg;
    bool has = has_finalizer(obj, finalizer_of(c));
    if (deleting(obj) ? has : !has)
        ck__ctl_enqueue(c->queue, obj);
}

static void object_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    object_add(obj, false, arg);
}

static void object_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t,
                          void *arg)
{
    (void)obj, (void)t, (void)arg;
}

/* The claims being deleted that pod names: they may be free now. */
static void pod_event(struct ck_protection_controller *c, const json_t *pod)
{
    size_t i;
    const json_t *vol;
    char buf[512];
    const char *ns = ck__meta_str(pod, "namespace");
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, vol)
    {
        const char *claim = volume_claim(pod, vol, buf, sizeof(buf));
        const json_t *obj = NULL;
        if (!claim || ck_lister_get(&c->objects, ns ? ns : "", claim, &obj) < 0)
            continue;
        if (deleting(obj) && has_finalizer(obj, finalizer_of(c)))
            ck__ctl_enqueue(c->queue, obj);
        ck_cached_unref(obj);
    }
}

static void pod_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    if (pod_finished(obj) || deleting(obj))
        pod_event(arg, obj);
}

static void pod_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    pod_add(obj, false, arg);
}

static void pod_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)t;
    pod_event(arg, obj);
}

void ck_protection_controller_handlers(struct ck_protection_controller *c,
                                       struct ck_event_handler *ret_objects,
                                       struct ck_event_handler *ret_pods)
{
    *ret_objects = (struct ck_event_handler){object_add, object_update, object_delete, c};
    *ret_pods = (struct ck_event_handler){pod_add, pod_update, pod_delete, c};
}

/* ---- lifecycle ---------------------------------------------------------------------- */

static int sync_key(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    return ck_protection_controller_sync(ctl->data, key, reterr);
}

static int init_common(struct ck_protection_controller *c, enum ck_protected what,
                       const struct ck_ctl_client *client, struct ck_clock *clock,
                       struct ck_err *reterr)
{
    c->what = what;
    c->client = *client;
    c->res = ck_controller_resource(
        "", "v1", what == CK_PROTECT_CLAIMS ? "persistentvolumeclaims" : "persistentvolumes");
    if (!c->res)
        return ck_err_set(reterr, CK_ENOENT, "protection: the API serves no volumes");
    int r = ck__ctl_init(&c->ctl, what == CK_PROTECT_CLAIMS ? "pvc-protection" : "pv-protection",
                         sync_key, c, clock, reterr);
    c->queue = c->ctl.queue;
    return r;
}

int ck_protection_controller_new(enum ck_protected what, struct ck_rest *client,
                                 struct ck_informer_factory *factory,
                                 struct ck_protection_controller **ret, struct ck_err *reterr)
{
    struct ck_protection_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck_ctl_client rest;
    ck_ctl_client_init_rest(&rest, client);
    int r = init_common(c, what, &rest, NULL, reterr);
    struct ck_event_handler ho, hp;
    ck_protection_controller_handlers(c, &ho, &hp);
    if (r == 0)
        r = ck__ctl_watch(factory, c->res, &ho, &c->infs[0], &c->objects, reterr);
    if (r == 0 && what == CK_PROTECT_CLAIMS)
        r = ck__ctl_watch(factory, ck_controller_resource("", "v1", "pods"), &hp, &c->infs[1],
                          &c->pods, reterr);
    if (r < 0) {
        ck_protection_controller_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

int ck_protection_controller_new_with(const struct ck_protection_controller_deps *deps,
                                      struct ck_protection_controller **ret, struct ck_err *reterr)
{
    if (!deps || !deps->client || !deps->objects ||
        (deps->what == CK_PROTECT_CLAIMS && !deps->pods))
        return ck_err_set(reterr, CK_EINVAL, "protection: a client and listers are needed");
    struct ck_protection_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->objects = *deps->objects;
    if (deps->pods)
        c->pods = *deps->pods;
    int r = init_common(c, deps->what, deps->client, deps->clock, reterr);
    if (r < 0) {
        ck_protection_controller_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

struct ck_wq *ck_protection_controller_queue(struct ck_protection_controller *c)
{
    return c->queue;
}

int ck_protection_controller_run(struct ck_protection_controller *c, int workers,
                                 struct ck_err *reterr)
{
    return ck__ctl_run(&c->ctl, c->infs, 2, workers, &c->runner, reterr);
}

struct ck_protection_controller *ck_protection_controller_free(struct ck_protection_controller *c)
{
    if (!c)
        return NULL;
    ck__ctl_stop(&c->ctl, c->runner);
    free(c);
    return NULL;
}
