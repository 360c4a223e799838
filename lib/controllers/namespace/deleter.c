/*
 * deleter.c - empties a namespace being deleted (kubernetes
 * pkg/controller/namespace/deletion/namespaced_resources_deleter.go and
 * status_condition_utils.go).
 *
 * One pass (ck__ns_delete): a fresh GET of the namespace; nothing to do unless it has a
 * deletionTimestamp and still the `kubernetes` finalizer. Then for every namespaced
 * resource discovery reports with the delete verb (preferred versions): deletecollection
 * when served (else list and delete each, both with propagationPolicy Background, so the
 * garbage collector takes dependents), then a list of what is left, counted per
 * resource and per finalizer. The five conditions Kubernetes keeps are written to
 * status.conditions when they changed: each failing one with its reason and message,
 * every other one False with the "ok" reason and message. Errors (discovery, deletes)
 * fail the pass, so it is retried with backoff; content left requeues the namespace;
 * nothing left calls namespaces/NAME/finalize without `kubernetes`.
 *
 * Difference from Kubernetes: while content remains Kubernetes waits an estimate (15 s
 * when finalizers hold objects, the pods' grace period for pods) before looking again;
 * we look again after CK_NS_RECHECK, since our deletes finish at once unless a finalizer
 * holds them, so a namespace goes as soon as its last finalizer is removed.
 *
 * Threading: called by the controller's workers; the queue never hands one namespace to
 * two of them at once.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "internal.h"

/* Kubernetes' five condition types, in its order, with their "ok" reason and message. */
static const struct {
    const char *type, *ok_reason, *ok_message;
} condition_types[] = {
    {"NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered",
     "All resources successfully discovered"},
    {"NamespaceDeletionGroupVersionParsingFailure", "ParsedGroupVersions",
     "All legacy kube types successfully parsed"},
    {"NamespaceDeletionContentFailure", "ContentDeleted",
     "All content successfully deleted, may be waiting on finalization"},
    {"NamespaceContentRemaining", "ContentRemoved", "All content successfully removed"},
    {"NamespaceFinalizersRemaining", "ContentHasNoFinalizers",
     "All content-preserving finalizers finished"},
};
#define N_TYPES (sizeof(condition_types) / sizeof(condition_types[0]))

/* The failing conditions of one pass: reason and message per type, NULL when ok. */
struct pass {
    const char *reason[N_TYPES];
    struct ck__buf message[N_TYPES];
    char **content_errors;
    size_t n_content_errors;
    char **remaining; /* "pods. has 2 resource instances" */
    size_t n_remaining;
    struct ck__strmap finalizers; /* finalizer -> count (value cast) */
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_string(char ***list, size_t *n, const char *s)
{
    char **grown = ck__realloc(*list, (*n + 1) * sizeof(*grown));
    if (!grown)
        return;
    *list = grown;
    if ((grown[*n] = ck__strdup(s)))
        (*n)++;
}

static void free_strings(char **list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

static void pass_release(struct pass *p)
{
    for (size_t i = 0; i < N_TYPES; i++)
        ck__buf_release(&p->message[i]);
    free_strings(p->content_errors, p->n_content_errors);
    free_strings(p->remaining, p->n_remaining);
    ck__strmap_release(&p->finalizers);
}

/* Joins a sorted list with ", " after prefix into the message of type i. */
static void set_joined(struct pass *p, size_t i, const char *reason, const char *prefix,
                       char **list, size_t n)
{
    if (n)
        qsort(list, n, sizeof(*list), cmp_str);
    p->reason[i] = reason;
    ck__buf_adds(&p->message[i], prefix);
    for (size_t k = 0; k < n; k++)
        ck__buf_printf(&p->message[i], "%s%s", k ? ", " : "", list[k]);
}

/* ---- deleting one resource's content ------------------------------------------------ */

static json_t *background_options(void)
{
    return json_pack("{s:s, s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1",
                     "propagationPolicy", "Background");
}

static int delete_each(struct ck_ns_controller *c, const struct ck_discovered *d, const char *ns,
                       const json_t *opts, struct ck_err *reterr)
{
    if (!(d->verbs & CK_VERB_LIST))
        return 0;
    json_t *list = NULL;
    int r = c->content->list(c->content_ctx, &d->res, ns, &list, reterr);
    if (r == CK_ENOENT)
        return 0;
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(list, "items"), i, item)
    {
        const char *name = ck__meta_str(item, "name");
        if (r < 0 || !name)
            break;
        r = ck_ctl_delete(&c->client, &d->res, ns, name, opts, NULL, reterr);
        if (r == CK_ENOENT)
            r = 0;
    }
    json_decref(list);
    return r;
}

/* Deletes what d holds in ns and counts what is left (deleteAllContentForGroupVersionResource). */
static void delete_resource(struct ck_ns_controller *c, const struct ck_discovered *d,
                            const char *ns, struct pass *p)
{
    struct ck_err err = {0};
    json_t *opts = background_options();
    int r = opts ? 0 : ck_err_set(&err, CK_ENOMEM, "out of memory");
    bool each = !(d->verbs & CK_VERB_DELETECOLLECTION);
    if (r == 0 && !each) {
        r = c->content->delete_collection(c->content_ctx, &d->res, ns, opts, &err);
        if (r == CK_ENOENT || err.http_status == 405) { /* not served after all */
            each = true;
            r = 0;
        }
    }
    if (r == 0 && each)
        r = delete_each(c, d, ns, opts, &err);
    json_decref(opts);
    if (r < 0) {
        char msg[1024];
        snprintf(msg, sizeof(msg), "%s.%s: %s", d->resource, d->group, err.msg);
        add_string(&p->content_errors, &p->n_content_errors, msg);
        return;
    }
    if (!(d->verbs & CK_VERB_LIST))
        return;
    json_t *list = NULL;
    if (c->content->list(c->content_ctx, &d->res, ns, &list, &err) < 0) {
        char msg[1024];
        snprintf(msg, sizeof(msg), "%s.%s: %s", d->resource, d->group, err.msg);
        add_string(&p->content_errors, &p->n_content_errors, msg);
        return;
    }
    const json_t *items = json_object_get(list, "items");
    if (json_array_size(items)) {
        char msg[1024];
        snprintf(msg, sizeof(msg), "%s.%s has %zu resource instances", d->resource, d->group,
                 json_array_size(items));
        add_string(&p->remaining, &p->n_remaining, msg);
    }
    size_t i, k;
    json_t *item, *f;
    json_array_foreach(items, i, item)
    {
        json_array_foreach(json_object_get(json_object_get(item, "metadata"), "finalizers"), k, f)
        {
            bool created = false;
            struct ck__strmap_entry *e =
                json_is_string(f)
                    ? ck__strmap_put(&p->finalizers, json_string_value(f), NULL, &created)
                    : NULL;
            if (e)
                e->value = (void *)((uintptr_t)e->value + 1);
        }
    }
    json_decref(list);
}

/* ---- conditions ----------------------------------------------------------------------- */

static json_t *find_condition(json_t *conditions, const char *type)
{
    size_t i;
    json_t *cond;
    json_array_foreach(conditions, i, cond)
    {
        const char *t = json_string_value(json_object_get(cond, "type"));
        if (t && strcmp(t, type) == 0)
            return cond;
    }
    return NULL;
}

static bool str_differs(const json_t *cond, const char *field, const char *value)
{
    const char *v = json_string_value(json_object_get(cond, field));
    return !v || strcmp(v, value) != 0;
}

/* Updates ns's status.conditions from p (updateConditions); true when something changed. */
static bool update_conditions(json_t *ns, struct pass *p)
{
    json_t *status = json_object_get(ns, "status");
    if (!json_is_object(status)) {
        status = json_object();
        json_object_set_new(ns, "status", status);
    }
    json_t *conditions = json_object_get(status, "conditions");
    if (!json_is_array(conditions)) {
        conditions = json_array();
        json_object_set_new(status, "conditions", conditions);
    }
    char now[40];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ck__time_format(ts.tv_sec, -1, now, sizeof(now));
    bool changed = false;
    for (size_t i = 0; i < N_TYPES; i++) {
        bool failing = p->reason[i] != NULL;
        const char *cstatus = failing ? "True" : "False";
        const char *reason = failing ? p->reason[i] : condition_types[i].ok_reason;
        const char *message = failing ? p->message[i].p : condition_types[i].ok_message;
        json_t *old = find_condition(conditions, condition_types[i].type);
        if (!old) {
            json_array_append_new(conditions, json_pack("{s:s, s:s, s:s, s:s, s:s}", "type",
                                                        condition_types[i].type, "status", cstatus,
                                                        "lastTransitionTime", now, "reason", reason,
                                                        "message", message ? message : ""));
            changed = true;
        } else if (str_differs(old, "status", cstatus) || str_differs(old, "reason", reason) ||
                   str_differs(old, "message", message ? message : "")) {
            if (str_differs(old, "status", cstatus))
                json_object_set_new(old, "lastTransitionTime", json_string(now));
            json_object_set_new(old, "status", json_string(cstatus));
            json_object_set_new(old, "reason", json_string(reason));
            json_object_set_new(old, "message", json_string(message ? message : ""));
            changed = true;
        }
    }
    return changed;
}

/* ---- one pass -------------------------------------------------------------------------- */

static bool has_kubernetes_finalizer(const json_t *ns)
{
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(json_object_get(ns, "spec"), "finalizers"), i, f)
    {
        if (json_is_string(f) && strcmp(json_string_value(f), "kubernetes") == 0)
            return true;
    }
    return false;
}

static int finalize(struct ck_ns_controller *c, const json_t *ns, struct ck_err *reterr)
{
    json_t *body = ck__json_copy(ns);
    json_t *kept = json_array();
    if (!body || !kept) {
        json_decref(body);
        json_decref(kept);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(json_object_get(ns, "spec"), "finalizers"), i, f)
    {
        if (!json_is_string(f) || strcmp(json_string_value(f), "kubernetes") != 0)
            json_array_append(kept, f);
    }
    json_t *spec = json_object_get(body, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(body, "spec", spec);
    }
    json_object_set_new(spec, "finalizers", kept);
    int r = c->content->finalize(c->content_ctx, body, reterr);
    json_decref(body);
    return r == CK_ENOENT ? 0 : r;
}

int ck__ns_delete(struct ck_ns_controller *c, const char *name, bool *ret_remaining,
                  struct ck_err *reterr)
{
    *ret_remaining = false;
    json_t *ns = NULL;
    int r = ck_ctl_get(&c->client, c->ns_res, "", name, &ns, reterr);
    if (r == CK_ENOENT)
        return 0;
    if (r < 0)
        return r;
    if (!json_object_get(json_object_get(ns, "metadata"), "deletionTimestamp") ||
        !has_kubernetes_finalizer(ns)) {
        json_decref(ns);
        return 0;
    }
    struct pass p = {0};
    struct ck_discovery_snapshot *snap = NULL;
    struct ck_err derr = {0};
    int dr = ck_discovery_get(c->discovery, &snap, &derr);
    if (dr < 0) {
        p.reason[0] = "DiscoveryFailed";
        ck__buf_adds(&p.message[0], derr.msg);
    } else if (snap->n_failed) {
        p.reason[0] = "DiscoveryFailed";
        ck__buf_printf(&p.message[0],
                       "Discovery failed for some groups, %zu failing: unable to retrieve the "
                       "complete list of server APIs: ",
                       snap->n_failed);
        for (size_t i = 0; i < snap->n_failed; i++)
            ck__buf_printf(&p.message[0], "%s%s: the server could not serve it", i ? ", " : "",
                           snap->failed[i]);
    }
    for (size_t i = 0; snap && i < snap->n; i++) {
        const struct ck_discovered *d = &snap->resources[i];
        if (d->preferred && d->res.namespaced && (d->verbs & CK_VERB_DELETE))
            delete_resource(c, d, name, &p);
    }
    if (p.n_content_errors) {
        qsort(p.content_errors, p.n_content_errors, sizeof(char *), cmp_str);
        p.reason[2] = "ContentDeletionFailed";
        ck__buf_printf(&p.message[2],
                       "Failed to delete all resource types, %zu remaining: ", p.n_content_errors);
        for (size_t i = 0; i < p.n_content_errors; i++)
            ck__buf_printf(&p.message[2], "%s%s", i ? ", " : "", p.content_errors[i]);
    }
    if (p.n_remaining)
        set_joined(&p, 3, "SomeResourcesRemain", "Some resources are remaining: ", p.remaining,
                   p.n_remaining);
    if (p.finalizers.len) {
        char **by = NULL;
        size_t n_by = 0, b = 0;
        for (struct ck__strmap_entry *e = ck__strmap_next(&p.finalizers, NULL, &b); e;
             e = ck__strmap_next(&p.finalizers, e, &b)) {
            char msg[1024];
            snprintf(msg, sizeof(msg), "%s in %zu resource instances", e->key,
                     (size_t)(uintptr_t)e->value);
            add_string(&by, &n_by, msg);
        }
        set_joined(&p, 4, "SomeFinalizersRemain",
                   "Some content in the namespace has finalizers remaining: ", by, n_by);
        free_strings(by, n_by);
    }
    bool failed = dr < 0 || (snap && snap->n_failed) || p.n_content_errors;
    bool remaining = p.n_remaining > 0;
    if (update_conditions(ns, &p)) {
        struct ck_err uerr = {0};
        r = ck_ctl_update_status(&c->client, c->ns_res, "", ns, NULL, &uerr);
        if (r < 0 && r != CK_ENOENT)
            CK_LOGV(2, "namespace controller: status of %s not written: %s", name, uerr.msg);
    }
    r = 0;
    if (failed)
        r = ck_err_set(reterr, CK_EIO, "namespace %s: %s", name,
                       p.message[dr < 0 || (snap && snap->n_failed) ? 0 : 2].p);
    else if (remaining)
        *ret_remaining = true;
    else
        r = finalize(c, ns, reterr);
    pass_release(&p);
    ck_discovery_snapshot_unref(snap);
    json_decref(ns);
    return r;
}
