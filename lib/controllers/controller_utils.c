/*
 * controller_utils.c - what every controller needs besides its own logic (kubernetes
 * pkg/controller/controller_utils.go): resources from the API kind descriptors, the
 * event sink over the client interface (the recorder is libckube-client's), controller
 * references, pod-from-template, slow-start batches, pod predicates and the ranking of
 * pods for scale-down. Expectations, also part of controller_utils.go, live in expectations.c.
 *
 * Resources: a controller names what it reads and writes by group/version/resource; the
 * kind descriptors of libckube-api say whether it is namespaced. The table below turns a
 * descriptor into a struct ck_resource once and keeps it until exit, because informer
 * factories keep the pointer they are given.
 *
 * Slow start: Kubernetes runs each call of a batch on its own goroutine; we run a batch
 * on up to 16 threads that take calls from a shared counter.
 *
 * Threading: the resource table has a mutex; everything else is stateless.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/controllers.h"
#include "ckube/internal/util.h"

#define MAX_BATCH_THREADS 16

static const json_t *meta(const json_t *obj)
{
    return json_object_get(obj, "metadata");
}

/* ---- resources ------------------------------------------------------------------ */

/* Every resource handed out, each in its own node so its address never changes. */
struct resource_node {
    struct resource_node *next;
    struct ck_resource res;
};

static struct {
    pthread_mutex_t lock;
    struct resource_node *head; /* kept until exit: callers hold the pointers */
} resources = {.lock = PTHREAD_MUTEX_INITIALIZER};

const struct ck_resource *ck_controller_resource(const char *group, const char *version,
                                                 const char *resource)
{
    const struct ck_kind *kind = ck_kind_lookup(group ? group : "", version, resource);
    if (!kind)
        return NULL;
    const struct ck_resource *found = NULL;
    pthread_mutex_lock(&resources.lock);
    for (struct resource_node *n = resources.head; n && !found; n = n->next)
        if (n->res.group == kind->group && n->res.version == kind->version &&
            n->res.resource == kind->resource)
            found = &n->res;
    if (!found) {
        struct resource_node *n = ck__malloc(sizeof(*n));
        if (n) {
            n->res =
                (struct ck_resource){kind->group, kind->version, kind->resource, kind->namespaced};
            n->next = resources.head;
            resources.head = n;
            found = &n->res;
        }
    }
    pthread_mutex_unlock(&resources.lock);
    return found;
}

/* ---- events ---------------------------------------------------------------------- */

static int sink_create(void *data, const char *namespace, const json_t *event, json_t **ret_event,
                       struct ck_err *reterr)
{
    const struct ck_ctl_event_sink *s = data;
    return ck_ctl_create(&s->client, s->events, namespace, event, ret_event, reterr);
}

static int sink_patch(void *data, const char *namespace, const char *name, const json_t *patch,
                      json_t **ret_event, struct ck_err *reterr)
{
    const struct ck_ctl_event_sink *s = data;
    return ck_ctl_patch(&s->client, s->events, namespace, name, NULL, CK_PATCH_STRATEGIC, patch,
                        ret_event, reterr);
}

static const struct ck_event_sink_ops ctl_sink_ops = {sink_create, sink_patch};

int ck_ctl_event_sink_init(struct ck_ctl_event_sink *state, const struct ck_ctl_client *client,
                           struct ck_event_sink *ret_sink)
{
    state->client = *client;
    state->events = ck_controller_resource("", "v1", "events");
    *ret_sink = (struct ck_event_sink){&ctl_sink_ops, state};
    return state->events ? 0 : CK_ENOENT;
}

/* ---- controller references and pods from templates --------------------------------- */

json_t *ck_controller_ref_new(const json_t *owner, const char *api_version, const char *kind)
{
    return json_pack("{s:s, s:s, s:s?, s:s?, s:b, s:b}", "apiVersion", api_version, "kind", kind,
                     "name", ck__meta_str(owner, "name"), "uid", ck__meta_str(owner, "uid"),
                     "controller", 1, "blockOwnerDeletion", 1);
}

/* Sets a deep copy of src[field] into dst when src has it; false when out of memory. */
static bool copy_field(json_t *dst, const json_t *src, const char *field)
{
    const json_t *v = json_object_get(src, field);
    return !v || json_object_set_new(dst, field, ck__json_copy(v)) == 0;
}

json_t *ck_pod_from_template(const json_t *template, const json_t *parent,
                             const json_t *controller_ref)
{
    const json_t *tmeta = json_object_get(template, "metadata");
    char prefix[300];
    snprintf(prefix, sizeof(prefix), "%s-",
             ck__meta_str(parent, "name") ? ck__meta_str(parent, "name") : "");
    json_t *pod_meta = json_pack("{s:s, s:s?}", "generateName", prefix, "namespace",
                                 ck__meta_str(parent, "namespace"));
    json_t *spec = ck__json_copy(json_object_get(template, "spec"));
    bool ok = pod_meta && spec && copy_field(pod_meta, tmeta, "labels") &&
              copy_field(pod_meta, tmeta, "annotations") &&
              copy_field(pod_meta, tmeta, "finalizers");
    if (ok && controller_ref)
        ok = json_object_set_new(pod_meta, "ownerReferences",
                                 json_pack("[O]", (json_t *)controller_ref)) == 0;
    if (!ok) {
        json_decref(pod_meta);
        json_decref(spec);
        return NULL;
    }
    return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata",
                     pod_meta, "spec", spec);
}

/* ---- slow start ------------------------------------------------------------------- */

struct batch {
    int (*fn)(void *arg, struct ck_err *reterr);
    void *arg;
    atomic_int remaining, failed;
    pthread_mutex_t lock;
    struct ck_err first_err;
};

static void *batch_worker(void *arg)
{
    struct batch *b = arg;
    while (atomic_fetch_sub(&b->remaining, 1) > 0) {
        struct ck_err err = {0};
        if (b->fn(b->arg, &err) < 0) {
            pthread_mutex_lock(&b->lock);
            if (atomic_fetch_add(&b->failed, 1) == 0)
                b->first_err = err;
            pthread_mutex_unlock(&b->lock);
        }
    }
    return NULL;
}

int ck_slow_start_batch(int count, int initial, int (*fn)(void *arg, struct ck_err *reterr),
                        void *arg, struct ck_err *reterr)
{
    struct batch b = {.fn = fn, .arg = arg};
    pthread_mutex_init(&b.lock, NULL);
    int successes = 0, size = initial > 0 ? initial : 1;
    for (int remaining = count; remaining > 0; size *= 2) {
        if (size > remaining)
            size = remaining;
        atomic_store(&b.remaining, size);
        int nthreads = size < MAX_BATCH_THREADS ? size : MAX_BATCH_THREADS;
        pthread_t threads[MAX_BATCH_THREADS];
        int started = 0;
        for (int i = 1; i < nthreads; i++)
            if (pthread_create(&threads[started], NULL, batch_worker, &b) == 0)
                started++;
        batch_worker(&b); /* this thread works too; it finishes the batch if none started */
        for (int i = 0; i < started; i++)
            pthread_join(threads[i], NULL);
        int failed = atomic_load(&b.failed);
        successes += size - failed;
        remaining -= size;
        if (failed) {
            if (reterr)
                *reterr = b.first_err;
            break;
        }
    }
    pthread_mutex_destroy(&b.lock);
    return successes;
}

/* ---- pods ------------------------------------------------------------------------ */

static const char *phase(const json_t *pod)
{
    return json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
}

bool ck_pod_is_active(const json_t *pod)
{
    const char *p = phase(pod);
    return json_object_get(meta(pod), "deletionTimestamp") == NULL &&
           !(p && (strcmp(p, "Succeeded") == 0 || strcmp(p, "Failed") == 0));
}

bool ck_pod_is_ready(const json_t *pod, const char **ret_since)
{
    size_t i;
    const json_t *cond;
    if (ret_since)
        *ret_since = NULL;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, cond)
    {
        const char *type = json_string_value(json_object_get(cond, "type"));
        const char *status = json_string_value(json_object_get(cond, "status"));
        if (type && strcmp(type, "Ready") == 0) {
            if (ret_since)
                *ret_since = json_string_value(json_object_get(cond, "lastTransitionTime"));
            return status && strcmp(status, "True") == 0;
        }
    }
    return false;
}

static int phase_order(const json_t *pod)
{
    const char *p = phase(pod);
    if (!p || strcmp(p, "Pending") == 0)
        return 0;
    return strcmp(p, "Unknown") == 0 ? 1 : 2; /* Running */
}

static long restarts(const json_t *pod)
{
    long n = 0;
    size_t i;
    const json_t *cs;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), i, cs)
        n += (long)json_integer_value(json_object_get(cs, "restartCount"));
    return n;
}

static const char *node_of(const json_t *pod)
{
    const char *n = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    return n && *n ? n : NULL;
}

static int strcmp_null(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/*
 * A pod with its sort keys read once: the comparison runs n log n times and must not go
 * back to the JSON (hash lookups and walks of conditions) each time.
 */
struct ranked {
    const json_t *pod;
    size_t rank; /* related pods on the same node */
    bool assigned, ready;
    int phase;
    long restarts;
    const char *ready_since, *created, *name;
};

/* Less means "delete first" (ActivePodsWithRanks.Less). */
static int rank_cmp(const void *pa, const void *pb)
{
    const struct ranked *x = pa, *y = pb;
    /* 1. unassigned before assigned */
    if (x->assigned != y->assigned)
        return x->assigned ? 1 : -1;
    /* 2. Pending < Unknown < Running */
    if (x->phase != y->phase)
        return x->phase - y->phase;
    /* 3. not ready before ready */
    if (x->ready != y->ready)
        return x->ready ? 1 : -1;
    /* 4. more related pods on the same node first */
    if (x->rank != y->rank)
        return x->rank > y->rank ? -1 : 1;
    /* 5. ready for a shorter time first */
    if (x->ready && y->ready && strcmp_null(x->ready_since, y->ready_since) != 0)
        return -strcmp_null(x->ready_since, y->ready_since);
    /* 6. more restarts first */
    if (x->restarts != y->restarts)
        return x->restarts > y->restarts ? -1 : 1;
    /* 7. newer first */
    int t = strcmp_null(y->created, x->created);
    if (t != 0)
        return t;
    return strcmp_null(x->name, y->name); /* stable */
}

int ck_pods_rank_for_deletion(const json_t **pods, size_t n, const json_t *const *related,
                              size_t n_related)
{
    if (!related) {
        related = pods;
        n_related = n;
    }
    struct ranked *r = ck__calloc(n ? n : 1, sizeof(*r));
    if (!r)
        return CK_ENOMEM;
    /* podsOnNode: related pods counted per node in one pass, not n x n_related compares */
    struct ck__strmap on_node = {0};
    for (size_t j = 0; j < n_related; j++) {
        const char *node = node_of(related[j]);
        if (!node)
            continue;
        bool created;
        struct ck__strmap_entry *e = ck__strmap_put(&on_node, node, NULL, &created);
        if (!e) {
            ck__strmap_release(&on_node);
            free(r);
            return CK_ENOMEM;
        }
        e->value = (void *)((uintptr_t)e->value + 1);
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *pod = pods[i];
        const char *node = node_of(pod);
        struct ck__strmap_entry *e = node ? ck__strmap_find(&on_node, node) : NULL;
        r[i] = (struct ranked){
            .pod = pod,
            .rank = e ? (size_t)(uintptr_t)e->value : 0,
            .assigned = node != NULL,
            .phase = phase_order(pod),
            .restarts = restarts(pod),
            .created = ck__meta_str(pod, "creationTimestamp"),
            .name = ck__meta_str(pod, "name"),
        };
        r[i].ready = ck_pod_is_ready(pod, &r[i].ready_since);
    }
    ck__strmap_release(&on_node);
    qsort(r, n, sizeof(*r), rank_cmp);
    for (size_t i = 0; i < n; i++)
        pods[i] = r[i].pod;
    free(r);
    return 0;
}
