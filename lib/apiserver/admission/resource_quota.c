/*
 * resource_quota.c - the ResourceQuota admission plugin: a write that would take a
 * namespace past one of its ResourceQuotas is refused, and one that fits is charged to
 * the quotas' status.used before it is stored.
 *
 * Mirrors k8s.io/apiserver pkg/admission/plugin/resourcequota (admission.go,
 * controller.go: checkRequest and checkQuotas) of Kubernetes 1.32, a validating step:
 *
 * - the operations counted are the evaluators' (include/ckube/quota.h): pods on create,
 *   services and claims on create and update (charged the growth only: a Service that
 *   becomes a LoadBalancer), every other namespaced resource on create (object counts);
 *   subresources, deletes, events and reviews are not counted;
 * - a quota covers the object when its status.hard names a resource the evaluator
 *   counts and the object matches its scopes; a quota the controller has not counted
 *   yet (no status.hard) covers nothing, as in Kubernetes;
 * - refusals are 403 in Kubernetes' words: `failed quota: q: must specify limits.cpu
 *   for: c`, `status unknown for quota: q, resources: pods`, `exceeded quota: q,
 *   requested: pods=1, used: pods=2, limited: pods=2`;
 * - the limitedResources of the plugin's configuration (--admission-control-config-file,
 *   config.c): a usage name of the resource that contains one of an entry's matchContains
 *   must be covered by a quota, even in a namespace without quotas, else `insufficient
 *   quota to consume: count/pods,pods`; a pod matching an entry's matchScopes (any
 *   entry's: getMatchedLimitedScopes does not look at the resource) needs a quota, in
 *   the namespace, with a scope of the same name that the pod matches, else `insufficient
 *   quota to match these scopes: [{CrossNamespacePodAffinity Exists []}]` (a 500);
 * - every covering quota is checked first, then each whose usage grows is written
 *   through its status subresource with its resourceVersion as precondition; a quota
 *   that changed meanwhile is read again and checked again (three retries, then the
 *   conflict is the answer). A dry run is checked and charges nothing.
 *
 * kube-apiserver funnels a namespace's requests through one worker so that they never
 * race each other; here the requests of a namespace take one of 64 striped locks for
 * the check and the charge, and the precondition guards against every other writer
 * (the controller, another server on the same etcd). A write charged but then failing
 * later (a validation of a later plugin, storage) stays charged until the
 * resourcequota controller recounts, as in Kubernetes.
 *
 * Threading: any request thread; the striped locks are the only shared state (tests
 * turn them off with ck__resource_quota_serialize, and hold checked requests with
 * ck__resource_quota_checked, to race on the precondition alone).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "ckube/quota.h"

#define RETRIES 3
#define N_LOCKS 64

static pthread_mutex_t locks[N_LOCKS] = {[0 ... N_LOCKS - 1] = PTHREAD_MUTEX_INITIALIZER};

bool ck__resource_quota_serialize = true;
void (*ck__resource_quota_checked)(void);

static pthread_mutex_t *lock_of(const char *namespace)
{
    unsigned h = 5381;
    for (const char *p = namespace; *p; p++)
        h = h * 33 + (unsigned char)*p;
    return &locks[h % N_LOCKS];
}

/* A quota's status.hard or status.used. */
static const json_t *status_of(const json_t *quota, const char *which)
{
    return json_object_get(json_object_get(quota, "status"), which);
}

/* ---- resource lists --------------------------------------------------------------- */

static int64_t milli_of(const json_t *v)
{
    int64_t m = 0;
    char buf[48];
    const char *s = json_string_value(v);
    if (!s && json_is_integer(v))
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v)), s = buf;
    if (!s || ck_quantity_milli(s, &m) < 0)
        return 0;
    return m;
}

/* Quantity.String() of v, in its own format. */
static const char *shown(const json_t *v, char *buf, size_t size)
{
    const char *s = json_string_value(v);
    return ck_quantity_format(milli_of(v), s && ck_quantity_is_binary(s), buf, size);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* prettyPrint of list's entries named in names (sorted): "a=1,b=2". */
static void pretty(const json_t *list, const char *const *names, size_t n, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char q[48];
        const json_t *v = json_object_get(list, names[i]);
        int w = snprintf(buf + used, size - used, "%s%s=%s", i ? "," : "", names[i],
                         shown(v, q, sizeof(q)));
        if (w > 0 && (size_t)w < size - used)
            used += (size_t)w;
    }
}

/* SubtractWithNonNegativeResult: a - b over a's names, never below zero. */
static json_t *subtract(const json_t *a, const json_t *b)
{
    json_t *out = json_object();
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)a, name, v)
    {
        int64_t d = milli_of(v) - milli_of(json_object_get(b, name));
        char q[48];
        const char *s = json_string_value(v);
        if (out && json_object_set_new(
                       out, name,
                       json_string(ck_quantity_format(d < 0 ? 0 : d, s && ck_quantity_is_binary(s),
                                                      q, sizeof(q)))) < 0)
            out = (json_decref(out), NULL);
    }
    return out;
}

/* ---- one check ------------------------------------------------------------------------ */

struct request {
    const struct ck__admission_attrs *a;
    const char *group, *resource;
    json_t *usage;      /* what obj uses */
    json_t *prev_usage; /* what old used (an update of a stored object), else NULL */
    json_t *limited;    /* the usage's names some quota must cover (limitedResources) */
    json_t *scopes;     /* the limitedResources' matchScopes obj matches (an array) */
};

/*
 * limitedByDefault: the names of usage that contain one of the matchContains of the
 * configuration's limitedResources entries for group/resource, as a new object (name ->
 * true); NULL when out of memory.
 */
static json_t *limited_names(const json_t *limited, const char *group, const char *resource,
                             const json_t *usage)
{
    json_t *out = json_object();
    size_t i, j;
    const json_t *lr, *m;
    json_array_foreach(limited, i, lr)
    {
        const char *g = json_string_value(json_object_get(lr, "apiGroup"));
        const char *r = json_string_value(json_object_get(lr, "resource"));
        if (strcmp(g ? g : "", group) != 0 || !r || strcmp(r, resource) != 0)
            continue;
        json_array_foreach(json_object_get(lr, "matchContains"), j, m)
        {
            const char *name;
            json_t *v;
            json_object_foreach((json_t *)usage, name, v)
            {
                if (out && json_string_value(m) && strstr(name, json_string_value(m)) &&
                    json_object_set_new(out, name, json_true()) < 0)
                    out = (json_decref(out), NULL);
            }
        }
    }
    return out;
}

/*
 * getMatchedLimitedScopes: the matchScopes of every limitedResources entry (whatever its
 * resource: only pods match scopes) that obj matches, as a new array; NULL out of memory.
 */
static json_t *limited_scopes(const json_t *limited, const char *group, const char *resource,
                              const json_t *obj)
{
    json_t *out = json_array();
    size_t i;
    const json_t *lr;
    json_array_foreach(limited, i, lr)
    {
        if (out && ck_quota_matching_scopes(group, resource, obj,
                                            json_object_get(lr, "matchScopes"), out) < 0)
            out = (json_decref(out), NULL);
    }
    return out;
}

/*
 * UncoveredQuotaScopes: whether a limited scope matched by the object has no quota scope
 * of the same name the object matches (quota_scopes); if so, the refusal in *reterr, the
 * uncovered scopes listed as Go prints them ("[{CrossNamespacePodAffinity Exists []}]").
 * kube-apiserver returns it as a plain error: a 500.
 */
static int uncovered_scopes(const json_t *limited, const json_t *quota_scopes,
                            struct ck_err *reterr)
{
    struct ck__buf b = {0};
    size_t i, j, n = 0;
    const json_t *l, *q;
    json_array_foreach(limited, i, l)
    {
        const char *name = json_string_value(json_object_get(l, "scopeName"));
        bool covered = false;
        json_array_foreach(quota_scopes, j, q)
        {
            const char *qname = json_string_value(json_object_get(q, "scopeName"));
            covered = covered || (qname && name && strcmp(qname, name) == 0);
        }
        if (covered)
            continue;
        ck__buf_printf(&b, "%s{%s %s [", n++ ? " " : "[", name ? name : "",
                       json_string_value(json_object_get(l, "operator")) ?: "");
        const json_t *v;
        json_array_foreach(json_object_get(l, "values"), j, v)
        {
            ck__buf_printf(&b, "%s%s", j ? " " : "", json_string_value(v) ?: "");
        }
        ck__buf_printf(&b, "]}");
    }
    if (!n)
        return 0;
    char *list = ck__buf_take(&b);
    int r = list ? ck_err_status(reterr, "InternalError",
                                 "insufficient quota to match these scopes: %s]", list)
                 : ck_err_no_memory(reterr);
    free(list);
    return r;
}

/*
 * Every limited scope the object matches (rq->scopes) needs a quota, covering the
 * object or not, with a scope of that name that the object matches.
 */
static int check_scopes(const struct request *rq, const json_t *quotas, struct ck_err *reterr)
{
    if (!json_array_size(rq->scopes))
        return 0;
    json_t *quota_scopes = json_array();
    size_t i;
    const json_t *q;
    json_array_foreach(quotas, i, q)
    {
        json_t *selectors = ck_quota_scope_selectors(q);
        if (quota_scopes &&
            (!selectors || ck_quota_matching_scopes(rq->group, rq->resource, rq->a->obj, selectors,
                                                    quota_scopes) < 0))
            quota_scopes = (json_decref(quota_scopes), NULL);
        json_decref(selectors);
    }
    int r = quota_scopes ? uncovered_scopes(rq->scopes, quota_scopes, reterr)
                         : ck_err_no_memory(reterr);
    json_decref(quota_scopes);
    return r;
}

/* What one covering quota becomes: name, the resourceVersion read and the new usage. */
struct charge {
    char name[254];
    char rv[32];
    json_t *used; /* NULL: unchanged */
};

/* The names of quota's status.hard the evaluator counts, sorted; *ret_n of them. */
static const char **restricted(const json_t *quota, const struct request *rq, size_t *ret_n)
{
    const json_t *hard = status_of(quota, "hard");
    const char **names = ck__calloc(json_object_size(hard) + 1, sizeof(*names));
    size_t n = 0;
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)hard, name, v)
    {
        if (names && ck_quota_matching_resource(rq->group, rq->resource, name))
            names[n++] = name;
    }
    if (names)
        qsort(names, n, sizeof(*names), cmp_str);
    *ret_n = n;
    return names;
}

/*
 * checkRequest over quotas (a JSON array): fills charges[] (one per quota, used NULL
 * when unchanged). 0, or a refusal's code with *reterr.
 */
static int check(const struct request *rq, const json_t *quotas, struct charge *charges,
                 struct ck_err *reterr)
{
    const struct ck__admission_attrs *a = rq->a;
    size_t i;
    const json_t *q;
    bool any = false;
    json_t *uncovered = ck__json_copy(rq->limited);
    if (rq->limited && !uncovered)
        return ck_err_no_memory(reterr);
    json_array_foreach(quotas, i, q)
    {
        const char *qname = ck__meta_str(q, "name");
        snprintf(charges[i].name, sizeof(charges[i].name), "%s", qname ? qname : "");
        snprintf(charges[i].rv, sizeof(charges[i].rv), "%s",
                 ck__meta_str(q, "resourceVersion") ? ck__meta_str(q, "resourceVersion") : "");
        charges[i].used = NULL;
        if (!ck_quota_matches(q, rq->group, rq->resource, a->obj))
            continue;
        const json_t *hard = status_of(q, "hard");
        char why[1024];
        if (ck_quota_constraints_fail(rq->group, rq->resource, hard, a->obj, why, sizeof(why))) {
            json_decref(uncovered);
            return ck__admission_forbidden(a, reterr, "failed quota: %s: %s", charges[i].name, why);
        }
        size_t n;
        const char **names = restricted(q, rq, &n);
        if (!names) {
            json_decref(uncovered);
            return ck_err_no_memory(reterr);
        }
        const json_t *used = status_of(q, "used");
        bool known = true;
        for (size_t k = 0; k < n; k++)
            known &= json_object_get(used, names[k]) != NULL;
        if (!known) {
            char list[1024] = "";
            for (size_t k = 0; k < n; k++)
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", k ? "," : "",
                         names[k]);
            free(names);
            json_decref(uncovered);
            return ck__admission_forbidden(a, reterr, "status unknown for quota: %s, resources: %s",
                                           charges[i].name, list);
        }
        for (size_t k = 0; k < n; k++) /* this quota covers what it restricts */
            json_object_del(uncovered, names[k]);
        free(names);
        charges[i].used = json_true(); /* interesting; computed below */
        any = true;
    }
    /* every name limited by default needs a covering quota */
    if (json_object_size(uncovered)) {
        const char *list[64];
        size_t n_list = 0;
        const char *name;
        json_t *v;
        json_object_foreach(uncovered, name, v)
        {
            if (n_list < 64)
                list[n_list++] = name;
        }
        qsort(list, n_list, sizeof(list[0]), cmp_str);
        char text[1024] = "";
        for (size_t k = 0; k < n_list; k++)
            snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s%s", k ? "," : "",
                     list[k]);
        json_decref(uncovered);
        return ck__admission_forbidden(a, reterr, "insufficient quota to consume: %s", text);
    }
    json_decref(uncovered);
    int r = check_scopes(rq, quotas, reterr);
    if (r < 0 || !any)
        return r;
    /* usage is never negative */
    const char *negative[64];
    size_t n_negative = 0;
    const char *name;
    json_t *v;
    json_object_foreach(rq->usage, name, v)
    {
        if (milli_of(v) < 0 && n_negative < 64)
            negative[n_negative++] = name;
    }
    if (n_negative) {
        qsort(negative, n_negative, sizeof(negative[0]), cmp_str);
        char list[1024] = "";
        for (size_t k = 0; k < n_negative; k++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", k ? "," : "",
                     negative[k]);
        return ck__admission_forbidden(a, reterr, "quota usage is negative for resource(s): %s",
                                       list);
    }
    json_array_foreach(quotas, i, q)
    {
        if (!charges[i].used)
            continue;
        json_decref(charges[i].used);
        charges[i].used = NULL;
        /* an update is charged its growth where old was covered too */
        json_t *delta = rq->prev_usage && ck_quota_matches(q, rq->group, rq->resource, a->old)
                            ? subtract(rq->usage, rq->prev_usage)
                            : json_incref(rq->usage);
        if (!delta)
            return ck_err_no_memory(reterr);
        /* requested: delta's non-zero entries that the quota limits */
        const json_t *hard = status_of(q, "hard");
        const json_t *used = status_of(q, "used");
        json_t *requested = json_object();
        json_object_foreach(delta, name, v)
        {
            if (requested && milli_of(v) != 0 && json_object_get(hard, name))
                json_object_set(requested, name, v);
        }
        json_decref(delta);
        if (!requested)
            return ck_err_no_memory(reterr);
        if (json_object_size(requested) == 0) {
            json_decref(requested);
            continue;
        }
        json_t *next = ck__json_copy(json_is_object(used) ? used : NULL);
        if (!next)
            next = json_object();
        if (!next || ck_quota_add(next, requested) < 0) {
            json_decref(next);
            json_decref(requested);
            return ck_err_no_memory(reterr);
        }
        const char *exceeded[64];
        size_t n_exceeded = 0;
        json_object_foreach(requested, name, v)
        {
            if (milli_of(json_object_get(next, name)) > milli_of(json_object_get(hard, name)) &&
                n_exceeded < 64)
                exceeded[n_exceeded++] = name;
        }
        if (n_exceeded) {
            qsort(exceeded, n_exceeded, sizeof(exceeded[0]), cmp_str);
            char req[512], use[512], lim[512];
            pretty(requested, exceeded, n_exceeded, req, sizeof(req));
            pretty(used, exceeded, n_exceeded, use, sizeof(use));
            pretty(hard, exceeded, n_exceeded, lim, sizeof(lim));
            json_decref(next);
            json_decref(requested);
            return ck__admission_forbidden(
                a, reterr, "exceeded quota: %s, requested: %s, used: %s, limited: %s",
                charges[i].name, req, use, lim);
        }
        json_decref(requested);
        charges[i].used = next;
    }
    return 0;
}

/* ---- the charge ----------------------------------------------------------------------- */

struct write_arg {
    const struct charge *charge;
};

/* The quota with its new status.used, at the resourceVersion checked (a precondition). */
static json_t *with_usage(const json_t *current, void *arg, struct ck_err *reterr)
{
    const struct charge *c = ((struct write_arg *)arg)->charge;
    json_t *next = ck__json_copy(current);
    json_t *status = next ? json_object_get(next, "status") : NULL;
    if (next && !json_is_object(status)) {
        status = json_object();
        json_object_set_new(next, "status", status);
    }
    if (!next || !status || json_object_set(status, "used", c->used) < 0 ||
        json_object_set_new(json_object_get(next, "metadata"), "resourceVersion",
                            json_string(c->rv)) < 0) {
        json_decref(next);
        ck_err_no_memory(reterr);
        return NULL;
    }
    return next;
}

static int collect(const json_t *q, void *arg)
{
    return json_array_append((json_t *)arg, (json_t *)q) < 0 ? -1 : 0;
}

/* The namespace's quotas, those named in only (NULL: all), as a new JSON array. */
static int read_quotas(struct ck__registry *reg, const char *namespace, const json_t *only,
                       json_t **ret, struct ck_err *reterr)
{
    const struct ck_kind *kind = ck_kind_lookup("", "v1", "resourcequotas");
    json_t *all = json_array(), *out = json_array();
    if (!all || !out) {
        json_decref(all);
        json_decref(out);
        return ck_err_no_memory(reterr);
    }
    int r = kind ? ck__admission_list(reg, kind, namespace, collect, all, reterr) : 0;
    size_t i;
    json_t *q;
    json_array_foreach(all, i, q)
    {
        const char *name = ck__meta_str(q, "name");
        if (r == 0 && (!only || (name && json_object_get(only, name))))
            r = json_array_append(out, q) < 0 ? ck_err_no_memory(reterr) : 0;
    }
    json_decref(all);
    if (r < 0) {
        json_decref(out);
        return r;
    }
    *ret = out;
    return 0;
}

static void release(struct charge *charges, size_t n)
{
    for (size_t i = 0; i < n; i++)
        charges[i].used = (json_decref(charges[i].used), NULL);
}

/* checkQuotas: check, then charge, re-reading the quotas that changed meanwhile. */
static int check_and_charge(struct ck__registry *reg, const struct request *rq,
                            struct ck_err *reterr)
{
    const struct ck_kind *kind = ck_kind_lookup("", "v1", "resourcequotas");
    json_t *only = NULL, *quotas = NULL;
    int r = 0;
    for (int attempt = 0; attempt <= RETRIES; attempt++) {
        if ((r = read_quotas(reg, rq->a->namespace, only, &quotas, reterr)) < 0)
            break;
        size_t n = json_array_size(quotas);
        if (n == 0 && !json_object_size(rq->limited) && !json_array_size(rq->scopes)) {
            json_decref(quotas);
            break;
        }
        struct charge *charges = ck__calloc(n ? n : 1, sizeof(*charges));
        if (!charges) {
            json_decref(quotas);
            r = ck_err_no_memory(reterr);
            break;
        }
        r = check(rq, quotas, charges, reterr);
        json_decref(quotas);
        if (r == 0 && ck__resource_quota_checked)
            ck__resource_quota_checked();
        if (r < 0 || rq->a->dry_run) {
            release(charges, n);
            free(charges);
            break;
        }
        json_t *failed = json_object();
        struct ck_err last = {0};
        for (size_t i = 0; failed && i < n; i++) {
            if (!charges[i].used)
                continue;
            struct write_arg arg = {&charges[i]};
            char *body = NULL;
            size_t len = 0;
            struct ck_err err = {0};
            int w = ck__registry_update(reg, kind, rq->a->namespace, charges[i].name, "status",
                                        with_usage, &arg, false, &body, &len, &err);
            free(body);
            if (w < 0) {
                json_object_set_new(failed, charges[i].name, json_true());
                ck_err_release(&last);
                last = err;
            }
        }
        release(charges, n);
        free(charges);
        json_decref(only);
        only = failed;
        if (!failed) {
            r = ck_err_no_memory(reterr);
            break;
        }
        if (json_object_size(failed) == 0) {
            ck_err_release(&last);
            r = 0;
            break;
        }
        if (attempt == RETRIES) {
            *reterr = last; /* the conflict is the answer */
            r = last.code < 0 ? last.code : CK_ECONFLICT;
            break;
        }
        ck_err_release(&last);
    }
    json_decref(only);
    return r;
}

static int validate(struct ck__registry *reg, const struct ck__admission_attrs *a,
                    struct ck_err *reterr)
{
    if (a->op == CK__ADMISSION_DELETE || (a->subresource && *a->subresource) || !a->obj ||
        !a->namespace || !*a->namespace || !a->kind || !a->kind->namespaced)
        return 0;
    bool update = a->op == CK__ADMISSION_UPDATE;
    if (!ck_quota_handles(a->kind->group, a->kind->resource, update))
        return 0;
    int64_t now = (int64_t)time(NULL);
    struct request rq = {.a = a, .group = a->kind->group, .resource = a->kind->resource};
    rq.usage = ck_quota_usage(rq.group, rq.resource, a->obj, now);
    if (update && a->old && ck__meta_str(a->old, "resourceVersion"))
        rq.prev_usage = ck_quota_usage(rq.group, rq.resource, a->old, now);
    const json_t *limited = reg->admission ? reg->admission->quota_limited : NULL;
    if (rq.usage && limited) {
        rq.limited = limited_names(limited, rq.group, rq.resource, rq.usage);
        rq.scopes = limited_scopes(limited, rq.group, rq.resource, a->obj);
    }
    int r;
    if (!rq.usage || (limited && (!rq.limited || !rq.scopes)) ||
        (update && a->old && ck__meta_str(a->old, "resourceVersion") && !rq.prev_usage)) {
        r = ck_err_no_memory(reterr);
    } else {
        pthread_mutex_t *m = ck__resource_quota_serialize ? lock_of(a->namespace) : NULL;
        if (m)
            pthread_mutex_lock(m);
        r = check_and_charge(reg, &rq, reterr);
        if (m)
            pthread_mutex_unlock(m);
    }
    json_decref(rq.usage);
    json_decref(rq.prev_usage);
    json_decref(rq.limited);
    json_decref(rq.scopes);
    return r;
}

const struct ck__admission_plugin ck__admission_resource_quota = {.name = "ResourceQuota",
                                                                  .validate = validate};
