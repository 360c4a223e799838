/*
 * flowcontrol.c - the API Priority and Fairness configuration the server keeps:
 * kube-apiserver's bootstrap-configuration ensurer (pkg/registry/flowcontrol/
 * ensurer, run by the priority-and-fairness-config-producer post-start hook)
 * and the Dangling condition its configuration consumer (k8s.io/apiserver
 * pkg/util/flowcontrol/apf_controller.go) writes on every FlowSchema.
 *
 * Each pass, at start and then every ENSURE_INTERVAL seconds from the ticker:
 * - the mandatory PriorityLevelConfigurations and FlowSchemas (exempt,
 *   catch-all) are created when missing and their spec put back when changed
 *   (the exempt level keeps the shares and lendable percent a user gave it);
 * - the suggested ones are created when missing, and their spec put back only
 *   while the object says so: apf.kubernetes.io/autoupdate-spec "true", or,
 *   without a boolean there, an object never changed since it was created
 *   (generation 1); a put back sets the annotation to "true";
 * - each FlowSchema's Dangling condition says whether the priority level it
 *   names exists (False, Found) or not (True, NotFound).
 * The objects themselves are lib/api/flowcontrol/bootstrap.json
 * (ck_flowcontrol_bootstrap()).
 *
 * Differences from Kubernetes (docs/differences.md): the pass runs every 10 s
 * rather than every minute; suggested objects dropped from a newer bootstrap
 * set are not removed (there is only one set so far). Requests are
 * classified and limited by these objects in apf.c.
 *
 * Threading: the passes run on the thread that starts the server, then on the
 * ticker thread only; they go through the registry like any request.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define AUTO_UPDATE "apf.kubernetes.io/autoupdate-spec"

/* o[k] when it is a string, else NULL. Borrowed. */
static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* obj's metadata.name, NULL when it has none. Borrowed. */
static const char *name_of(const json_t *obj)
{
    return str(json_object_get(obj, "metadata"), "name");
}

/* parent[key] when an object, else a new empty object stored there; NULL when out of memory. */
static json_t *object_at(json_t *parent, const char *key)
{
    json_t *o = json_object_get(parent, key);
    if (json_is_object(o))
        return o;
    o = json_object();
    return parent && json_object_set_new(parent, key, o) == 0 ? o : NULL;
}

struct revision {
    const json_t *bootstrap; /* the object as the bootstrap set has it */
    bool mandatory;
};

/* Kubernetes' shouldUpdateSpec: the annotation's boolean, else whether never changed. */
static bool should_update_spec(const json_t *current)
{
    const json_t *meta = json_object_get(current, "metadata");
    const char *value = str(json_object_get(meta, "annotations"), AUTO_UPDATE);
    bool update;
    if (value && ck__parse_bool(value, &update))
        return update;
    return json_integer_value(json_object_get(meta, "generation")) == 1;
}

static json_t *revise(const json_t *current, void *arg, struct ck_err *reterr)
{
    const struct revision *rev = arg;
    json_t *next = ck__json_copy(current);
    if (!next) {
        ck_err_no_memory(reterr);
        return NULL;
    }
    if (!rev->mandatory && !should_update_spec(current))
        return next; /* the user's own now: unchanged, nothing is written */
    json_t *spec = ck__json_copy(json_object_get(rev->bootstrap, "spec"));
    const json_t *exempt = json_object_get(json_object_get(current, "spec"), "exempt");
    int failed = !spec;
    if (spec && rev->mandatory && json_is_object(json_object_get(spec, "exempt")) &&
        json_is_object(exempt)) { /* the exempt level's tunables are the user's */
        static const char *const keep[] = {"nominalConcurrencyShares", "lendablePercent"};
        for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
            json_t *v = json_object_get(exempt, keep[i]);
            if (v)
                failed |= json_object_set(json_object_get(spec, "exempt"), keep[i], v);
        }
    }
    failed |= json_object_set_new(next, "spec", spec);
    json_t *annotations = object_at(object_at(next, "metadata"), "annotations");
    failed |= json_object_set_new(annotations, AUTO_UPDATE, json_string("true"));
    if (failed) {
        json_decref(next);
        ck_err_no_memory(reterr);
        return NULL;
    }
    return next;
}

/* Creates obj when missing, else revises it; logs what fails. */
static void ensure_one(struct ck__registry *reg, const struct ck_kind *kind, const json_t *obj,
                       bool mandatory)
{
    const char *name = name_of(obj);
    const struct ck_kv *kv = NULL;
    struct ck_err err = {0};
    char *out = NULL;
    size_t len = 0;
    int r = ck__registry_get(reg, kind, NULL, name, &kv, &err);
    ck_kv_unref(kv);
    if (r == CK_ENOENT) {
        ck_err_release(&err);
        json_t *copy = ck__json_copy(obj);
        r = copy ? ck__registry_create(reg, kind, NULL, copy, false, &out, &len, &err)
                 : ck_err_no_memory(&err);
        json_decref(copy);
        if (r == CK_EEXIST) /* another server made it meanwhile */
            r = 0;
    } else if (r == 0) {
        struct revision rev = {obj, mandatory};
        r = ck__registry_update(reg, kind, NULL, name, NULL, revise, &rev, false, &out, &len, &err);
    }
    free(out);
    if (r < 0)
        CK_LOGW("cannot ensure the %s %s: %s", kind->kind, name, ck_err_message(&err));
    ck_err_release(&err);
}

struct dangling {
    const char *status, *reason;
    char message[512];
};

/* Sets the Dangling condition; its transition time moves only when its status does. */
static json_t *set_dangling(const json_t *current, void *arg, struct ck_err *reterr)
{
    const struct dangling *d = arg;
    json_t *next = ck__json_copy(current);
    if (!next || ck__json_set_condition(next, "Dangling", d->status, d->reason, d->message,
                                        (long long)time(NULL)) < 0) {
        json_decref(next);
        ck_err_no_memory(reterr);
        return NULL;
    }
    return next;
}

/* The names of the priority levels, as a JSON object used as a set; NULL on failure. */
static json_t *level_names(struct ck__registry *reg, const struct ck_kind *kind)
{
    struct ck__list_options opts = {0};
    struct ck__list_result res = {0};
    struct ck_err err = {0};
    json_t *names = NULL;
    if (ck__registry_list(reg, kind, &opts, &res, &err) == 0 && (names = json_object())) {
        for (size_t i = 0; i < res.n_kvs; i++) {
            json_t *obj = ck__decode_stored(res.kvs[i]);
            const char *name = name_of(obj);
            if (name)
                json_object_set_new(names, name, json_true());
            json_decref(obj);
        }
    }
    ck__list_result_release(&res);
    ck_err_release(&err);
    return names;
}

static void mark_dangling(struct ck__registry *reg, const struct ck_kind *schemas,
                          const struct ck_kind *levels)
{
    json_t *names = level_names(reg, levels);
    struct ck__list_options opts = {0};
    struct ck__list_result res = {0};
    struct ck_err err = {0};
    if (!names || ck__registry_list(reg, schemas, &opts, &res, &err) < 0) {
        json_decref(names);
        ck_err_release(&err);
        return;
    }
    for (size_t i = 0; i < res.n_kvs; i++) {
        json_t *fs = ck__decode_stored(res.kvs[i]);
        const char *name = name_of(fs);
        const json_t *spec = json_object_get(fs, "spec");
        const char *level = str(json_object_get(spec, "priorityLevelConfiguration"), "name");
        struct dangling d = {0};
        bool found = level && json_object_get(names, level);
        d.status = found ? "False" : "True";
        d.reason = found ? "Found" : "NotFound";
        snprintf(d.message, sizeof(d.message),
                 found ? "This FlowSchema references the PriorityLevelConfiguration object "
                         "named \"%s\" and it exists"
                       : "This FlowSchema references the PriorityLevelConfiguration object "
                         "named \"%s\" but there is no such object",
                 level ? level : "");
        const json_t *c;
        size_t k;
        bool same = false;
        json_array_foreach(json_object_get(json_object_get(fs, "status"), "conditions"), k, c)
        {
            const char *type = str(c, "type"), *status = str(c, "status");
            const char *message = str(c, "message");
            if (type && strcmp(type, "Dangling") == 0)
                same = status && strcmp(status, d.status) == 0 && message &&
                       strcmp(message, d.message) == 0;
        }
        char *out = NULL;
        size_t len = 0;
        struct ck_err uerr = {0};
        if (!same && name &&
            ck__registry_update(reg, schemas, NULL, name, "status", set_dangling, &d, false, &out,
                                &len, &uerr) < 0)
            CK_LOGV(2, "cannot set the Dangling condition of flow schema %s: %s", name,
                    ck_err_message(&uerr));
        free(out);
        ck_err_release(&uerr);
        json_decref(fs);
    }
    ck__list_result_release(&res);
    json_decref(names);
}

void ck__apf_ensure(struct ck__registry *reg)
{
    static const char *const collections[] = {"priorityLevelConfigurations", "flowSchemas"};
    const struct ck_kind *kinds[] = {
        ck_kind_lookup("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations"),
        ck_kind_lookup("flowcontrol.apiserver.k8s.io", "v1", "flowschemas"),
    };
    if (!kinds[0] || !kinds[1])
        return; /* the group is not served */
    json_t *bootstrap = ck_flowcontrol_bootstrap();
    if (!bootstrap) {
        CK_LOGW("cannot ensure the API Priority and Fairness configuration: out of memory");
        return;
    }
    for (size_t c = 0; c < 2; c++)
        for (int mandatory = 1; mandatory >= 0; mandatory--) {
            const json_t *set = json_object_get(bootstrap, mandatory ? "mandatory" : "suggested");
            size_t i;
            const json_t *obj;
            json_array_foreach(json_object_get(set, collections[c]), i, obj)
            {
                ensure_one(reg, kinds[c], obj, mandatory);
            }
        }
    json_decref(bootstrap);
    mark_dangling(reg, kinds[1], kinds[0]);
}
