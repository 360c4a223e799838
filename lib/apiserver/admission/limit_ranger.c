/*
 * limit_ranger.c - the LimitRanger admission plugin: the LimitRanges of a namespace give
 * its pods' containers default requests and limits, and bound what pods, containers and
 * claims may ask for.
 *
 * Mirrors plugin/pkg/admission/limitranger/admission.go of Kubernetes 1.32:
 *
 * - pod creates (not updates: containers' resources never change there, and not
 *   subresources), mutating: each Container item's defaultRequest and default fill the
 *   requests and limits a container or init container lacks, and the pod is annotated
 *   `kubernetes.io/limit-ranger: LimitRanger plugin set: cpu, memory request for
 *   container c; cpu limit for init container i`;
 * - pod creates, validating: each Container item's min, max and maxLimitRequestRatio
 *   hold for every container and init container, and each Pod item's for the pod's
 *   requests and limits (the sum of its containers and sidecars, or the largest init
 *   container with the sidecars started before it, if larger);
 * - claim creates and updates: each PersistentVolumeClaim item's min and max hold for
 *   spec.resources.requests;
 * - refusals are 403 `<resource> "<name>" is forbidden: <why>`, several joined as
 *   `[a, b]`, in Kubernetes' words: `minimum cpu usage per Container is 100m, but request
 *   is 50m`, `maximum memory usage per Pod is 1Gi.  No limit is specified`, `cpu max limit
 *   to request ratio per Container is 2, but provided ratio is 4.000000`.
 *
 * Objects being deleted are left alone. LimitRanges are read from the store at each
 * request (kube-apiserver reads its informer, with a live lookup when it has none).
 * Quantities are compared by milli value; a pod sum is printed in its first term's
 * format (`256Mi`, `1500m`), and other quantities as they are written.
 *
 * Threading: reads the store only.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

#define ANNOTATION "kubernetes.io/limit-ranger"

/* The LimitRanges of the namespace, as one JSON array (a new reference). */
static int collect(const json_t *lr, void *arg)
{
    return json_array_append((json_t *)arg, (json_t *)lr) < 0 ? -1 : 0;
}

static int limit_ranges(struct ck__registry *reg, const struct ck__admission_attrs *a, json_t **ret,
                        struct ck_err *reterr)
{
    const struct ck_kind *kind = ck_kind_lookup("", "v1", "limitranges");
    json_t *list = json_array();
    if (!list)
        return ck_err_no_memory(reterr);
    int r = kind ? ck__admission_list(reg, kind, a->namespace, collect, list, reterr) : 0;
    if (r < 0) {
        json_decref(list);
        return r;
    }
    *ret = list;
    return 0;
}

/* ---- messages ------------------------------------------------------------------------ */

/* What the validating step found, joined as utilerrors.NewAggregate words it. */
struct problems {
    char text[2048];
    size_t len, n;
};

static void problem(struct problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct problems *p, const char *fmt, ...)
{
    char one[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(one, sizeof(one), fmt, ap);
    va_end(ap);
    int w = snprintf(p->text + p->len, sizeof(p->text) - p->len, "%s%s", p->n ? ", " : "", one);
    if (w > 0 && (size_t)w < sizeof(p->text) - p->len)
        p->len += (size_t)w;
    p->n++;
}

/* ---- quantities ---------------------------------------------------------------------- */

/* A quantity to compare and print: its milli value and its text. */
struct amount {
    bool set;
    int64_t milli;
    char text[48];
};

static struct amount amount_of(const json_t *list, const char *resource)
{
    struct amount q = {0};
    const char *s = json_string_value(json_object_get(list, resource));
    if (s && ck_quantity_milli(s, &q.milli) == 0) {
        q.set = true;
        snprintf(q.text, sizeof(q.text), "%s", s);
    }
    return q;
}

/* Quantity.String() of a sum, in the format (binary or decimal) of binary. */
static void format_amount(struct amount *q, bool binary)
{
    static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    static const char *const dec[] = {"", "k", "M", "G", "T", "P", "E"};
    if (q->milli % 1000 != 0) {
        snprintf(q->text, sizeof(q->text), "%lldm", (long long)q->milli);
        return;
    }
    long long v = (long long)(q->milli / 1000);
    int unit = binary ? 1024 : 1000, e = 0;
    while (v != 0 && e < 6 && v % unit == 0)
        v /= unit, e++;
    snprintf(q->text, sizeof(q->text), "%lld%s", v, binary ? bin[e] : dec[e]);
}

/* A resource list of amounts, as a JSON object of milli values plus format flags. */
struct sums {
    json_t *milli;  /* resource -> integer milli value */
    json_t *binary; /* resource -> true when its first term was binary */
};

static bool is_binary(const char *text)
{
    size_t n = strlen(text);
    return n >= 2 && text[n - 1] == 'i';
}

static void sums_add(struct sums *s, const json_t *list)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)list, k, v)
    {
        int64_t m;
        if (!json_is_string(v) || ck_quantity_milli(json_string_value(v), &m) < 0)
            continue;
        json_t *have = json_object_get(s->milli, k);
        json_object_set_new(s->milli, k, json_integer((have ? json_integer_value(have) : 0) + m));
        if (!json_object_get(s->binary, k))
            json_object_set_new(s->binary, k, json_boolean(is_binary(json_string_value(v))));
    }
}

/* list += other, both sums. */
static void sums_add_sums(struct sums *s, const struct sums *other)
{
    const char *k;
    json_t *v;
    json_object_foreach(other->milli, k, v)
    {
        json_t *have = json_object_get(s->milli, k);
        json_object_set_new(
            s->milli, k,
            json_integer((have ? json_integer_value(have) : 0) + json_integer_value(v)));
        if (!json_object_get(s->binary, k))
            json_object_set(s->binary, k, json_object_get(other->binary, k));
    }
}

/* s = max(s, other) per resource. */
static void sums_max(struct sums *s, const struct sums *other)
{
    const char *k;
    json_t *v;
    json_object_foreach(other->milli, k, v)
    {
        json_t *have = json_object_get(s->milli, k);
        if (!have || json_integer_value(v) > json_integer_value(have)) {
            json_object_set(s->milli, k, v);
            json_object_set(s->binary, k, json_object_get(other->binary, k));
        }
    }
}

static void sums_release(struct sums *s)
{
    json_decref(s->milli);
    json_decref(s->binary);
}

static struct sums sums_new(void)
{
    return (struct sums){json_object(), json_object()};
}

/* podRequests / podLimits (which: "requests" or "limits"), sidecars included. */
static struct sums pod_total(const json_t *spec, const char *which)
{
    struct sums total = sums_new(), sidecars = sums_new(), init = sums_new();
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        sums_add(&total, json_object_get(json_object_get(c, "resources"), which));
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        const json_t *list = json_object_get(json_object_get(c, "resources"), which);
        const char *policy = json_string_value(json_object_get(c, "restartPolicy"));
        struct sums this = sums_new();
        if (policy && strcmp(policy, "Always") == 0) {
            sums_add(&total, list);
            sums_add(&sidecars, list);
            sums_add_sums(&this, &sidecars);
        } else {
            sums_add(&this, list);
            sums_add_sums(&this, &sidecars);
        }
        sums_max(&init, &this);
        sums_release(&this);
    }
    sums_max(&total, &init);
    sums_release(&sidecars);
    sums_release(&init);
    return total;
}

static struct amount sum_of(const struct sums *s, const char *resource)
{
    struct amount q = {0};
    json_t *v = json_object_get(s->milli, resource);
    if (v) {
        q.set = true;
        q.milli = json_integer_value(v);
        format_amount(&q, json_is_true(json_object_get(s->binary, resource)));
    }
    return q;
}

/* ---- the constraints (minConstraint, maxConstraint, limitRequestRatioConstraint) ----- */

static void min_constraint(struct problems *p, const char *type, const char *res,
                           const struct amount *enforced, const struct amount *req,
                           const struct amount *lim)
{
    if (!req->set)
        problem(p, "minimum %s usage per %s is %s.  No request is specified", res, type,
                enforced->text);
    else if (req->milli < enforced->milli)
        problem(p, "minimum %s usage per %s is %s, but request is %s", res, type, enforced->text,
                req->text);
    else if (lim->set && lim->milli < enforced->milli)
        problem(p, "minimum %s usage per %s is %s, but limit is %s", res, type, enforced->text,
                lim->text);
}

static void max_constraint(struct problems *p, const char *type, const char *res,
                           const struct amount *enforced, const struct amount *req,
                           const struct amount *lim)
{
    if (!lim->set)
        problem(p, "maximum %s usage per %s is %s.  No limit is specified", res, type,
                enforced->text);
    else if (lim->milli > enforced->milli)
        problem(p, "maximum %s usage per %s is %s, but limit is %s", res, type, enforced->text,
                lim->text);
    else if (req->set && req->milli > enforced->milli)
        problem(p, "maximum %s usage per %s is %s, but request is %s", res, type, enforced->text,
                req->text);
}

/* maxRequestConstraint: claims have no limits. */
static void max_request_constraint(struct problems *p, const char *type, const char *res,
                                   const struct amount *enforced, const struct amount *req)
{
    if (!req->set)
        problem(p, "maximum %s usage per %s is %s.  No request is specified", res, type,
                enforced->text);
    else if (req->milli > enforced->milli)
        problem(p, "maximum %s usage per %s is %s, but request is %s", res, type, enforced->text,
                req->text);
}

static void ratio_constraint(struct problems *p, const char *type, const char *res,
                             const struct amount *enforced, const struct amount *req,
                             const struct amount *lim)
{
    if (!req->set || req->milli == 0) {
        problem(p,
                "%s max limit to request ratio per %s is %s, but no request is specified or "
                "request is 0",
                res, type, enforced->text);
        return;
    }
    if (!lim->set || lim->milli == 0) {
        problem(p,
                "%s max limit to request ratio per %s is %s, but no limit is specified or limit "
                "is 0",
                res, type, enforced->text);
        return;
    }
    double observed = (double)lim->milli / (double)req->milli;
    if (observed * 1000 > (double)enforced->milli)
        problem(p, "%s max limit to request ratio per %s is %s, but provided ratio is %f", res,
                type, enforced->text, observed);
}

/* Checks one requests/limits pair against an item's min, max and ratio bags. */
typedef struct amount (*amount_fn)(const void *list, const char *resource);

static struct amount from_json(const void *list, const char *resource)
{
    return amount_of(list, resource);
}

static struct amount from_sums(const void *s, const char *resource)
{
    return sum_of(s, resource);
}

static void check_bounds(struct problems *p, const json_t *item, const char *type,
                         const void *requests, const void *limits, amount_fn get)
{
    const char *res;
    json_t *v;
    json_object_foreach(json_object_get(item, "min"), res, v)
    {
        struct amount e = amount_of(json_object_get(item, "min"), res), rq = get(requests, res),
                      lm = get(limits, res);
        if (e.set)
            min_constraint(p, type, res, &e, &rq, &lm);
    }
    json_object_foreach(json_object_get(item, "max"), res, v)
    {
        struct amount e = amount_of(json_object_get(item, "max"), res), rq = get(requests, res),
                      lm = get(limits, res);
        if (e.set)
            max_constraint(p, type, res, &e, &rq, &lm);
    }
    json_object_foreach(json_object_get(item, "maxLimitRequestRatio"), res, v)
    {
        struct amount e = amount_of(json_object_get(item, "maxLimitRequestRatio"), res),
                      rq = get(requests, res), lm = get(limits, res);
        if (e.set)
            ratio_constraint(p, type, res, &e, &rq, &lm);
    }
}

/* ---- pods ------------------------------------------------------------------------------ */

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/*
 * mergeContainerResources: fills what c lacks from the defaults; appends "cpu, memory
 * request for <what> <name>" and the like to note.
 */
static int default_container(json_t *c, const json_t *requests, const json_t *limits,
                             const char *what, char *note, size_t note_size)
{
    json_t *resources = json_object_get(c, "resources");
    if (!json_is_object(resources)) {
        if (json_object_set_new(c, "resources", json_object()) < 0)
            return CK_ENOMEM;
        resources = json_object_get(c, "resources");
    }
    static const char *const bags[] = {"requests", "limits"};
    const json_t *defaults[] = {requests, limits};
    const char *const kinds[] = {"request", "limit"};
    for (size_t b = 0; b < 2; b++) {
        if (json_object_size(defaults[b]) == 0)
            continue;
        json_t *list = json_object_get(resources, bags[b]);
        if (!json_is_object(list)) {
            if (json_object_set_new(resources, bags[b], json_object()) < 0)
                return CK_ENOMEM;
            list = json_object_get(resources, bags[b]);
        }
        const char *set[32];
        size_t n = 0;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)defaults[b], k, v)
        {
            if (json_object_get(list, k))
                continue;
            if (json_object_set(list, k, v) < 0)
                return CK_ENOMEM;
            if (n < sizeof(set) / sizeof(set[0])) /* the annotation names the first 32 */
                set[n++] = k;
        }
        if (!n)
            continue;
        qsort(set, n, sizeof(set[0]), cmp_str);
        size_t used = strlen(note);
        for (size_t i = 0; i < n; i++) {
            int w = snprintf(note + used, note_size - used, "%s%s",
                             i      ? ", "
                             : used ? "; "
                                    : "",
                             set[i]);
            if (w > 0 && (size_t)w < note_size - used)
                used += (size_t)w;
        }
        const char *name = json_string_value(json_object_get(c, "name"));
        snprintf(note + used, note_size - used, " %s for %s %s", kinds[b], what, name ? name : "");
    }
    return 0;
}

static int mutate_pod(json_t *pod, const json_t *lr)
{
    json_t *requests = json_object(), *limits = json_object();
    int r = requests && limits ? 0 : CK_ENOMEM;
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(json_object_get(lr, "spec"), "limits"), i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        if (r < 0 || !type || strcmp(type, "Container") != 0)
            continue;
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(item, "defaultRequest"), k, v)
        {
            r |= json_object_set(requests, k, v);
        }
        json_object_foreach(json_object_get(item, "default"), k, v)
        {
            r |= json_object_set(limits, k, v);
        }
    }
    char note[2048] = "";
    json_t *spec = json_object_get(pod, "spec");
    static const char *const lists[] = {"containers", "initContainers"};
    static const char *const what[] = {"container", "init container"};
    for (size_t l = 0; r == 0 && l < 2; l++) {
        json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            if (r == 0 && json_is_object(c))
                r = default_container(c, requests, limits, what[l], note, sizeof(note));
        }
    }
    json_decref(requests);
    json_decref(limits);
    if (r < 0 || !*note)
        return r < 0 ? CK_ENOMEM : 0;
    json_t *meta = json_object_get(pod, "metadata");
    json_t *annotations = json_object_get(meta, "annotations");
    if (!json_is_object(annotations)) {
        if (json_object_set_new(meta, "annotations", json_object()) < 0)
            return CK_ENOMEM;
        annotations = json_object_get(meta, "annotations");
    }
    char value[2100];
    snprintf(value, sizeof(value), "LimitRanger plugin set: %s", note);
    return json_object_set_new(annotations, ANNOTATION, json_string(value)) < 0 ? CK_ENOMEM : 0;
}

static void validate_pod(struct problems *p, const json_t *pod, const json_t *lr)
{
    const json_t *spec = json_object_get(pod, "spec");
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(json_object_get(lr, "spec"), "limits"), i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        if (type && strcmp(type, "Container") == 0) {
            static const char *const lists[] = {"containers", "initContainers"};
            for (size_t l = 0; l < 2; l++) {
                size_t j;
                json_t *c;
                json_array_foreach(json_object_get(spec, lists[l]), j, c)
                {
                    const json_t *res = json_object_get(c, "resources");
                    check_bounds(p, item, type, json_object_get(res, "requests"),
                                 json_object_get(res, "limits"), from_json);
                }
            }
        } else if (type && strcmp(type, "Pod") == 0) {
            struct sums requests = pod_total(spec, "requests"), limits = pod_total(spec, "limits");
            check_bounds(p, item, type, &requests, &limits, from_sums);
            sums_release(&requests);
            sums_release(&limits);
        }
    }
}

static void validate_claim(struct problems *p, const json_t *claim, const json_t *lr)
{
    const json_t *requests =
        json_object_get(json_object_get(json_object_get(claim, "spec"), "resources"), "requests");
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(json_object_get(lr, "spec"), "limits"), i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        if (!type || strcmp(type, "PersistentVolumeClaim") != 0)
            continue;
        const char *res;
        json_t *v;
        struct amount none = {0};
        json_object_foreach(json_object_get(item, "min"), res, v)
        {
            struct amount e = amount_of(json_object_get(item, "min"), res),
                          rq = amount_of(requests, res);
            if (e.set)
                min_constraint(p, type, res, &e, &rq, &none);
        }
        json_object_foreach(json_object_get(item, "max"), res, v)
        {
            struct amount e = amount_of(json_object_get(item, "max"), res),
                          rq = amount_of(requests, res);
            if (e.set)
                max_request_constraint(p, type, res, &e, &rq);
        }
    }
}

/* ---- the plugin ------------------------------------------------------------------------- */

/* SupportsAttributes, and objects being deleted left alone. */
static bool applies(const struct ck__admission_attrs *a, bool *ret_pod)
{
    *ret_pod = ck__admission_is_role(a, CK_KIND_ROLE_POD);
    bool claim = ck__admission_is(a, "", "persistentvolumeclaims");
    if (a->op == CK__ADMISSION_DELETE || (!*ret_pod && !claim))
        return false;
    if (*ret_pod && a->op == CK__ADMISSION_UPDATE)
        return false;
    return !json_object_get(json_object_get(a->old, "metadata"), "deletionTimestamp");
}

static int run(struct ck__registry *reg, const struct ck__admission_attrs *a, bool mutating,
               struct ck_err *reterr)
{
    bool pod;
    if (!applies(a, &pod) || (mutating && !pod))
        return 0;
    json_t *ranges = NULL;
    int r = limit_ranges(reg, a, &ranges, reterr);
    if (r < 0)
        return r;
    size_t i;
    json_t *lr;
    json_array_foreach(ranges, i, lr)
    {
        if (mutating) {
            if (mutate_pod(a->obj, lr) < 0) {
                r = ck_err_no_memory(reterr);
                break;
            }
            continue;
        }
        struct problems p = {.len = 0};
        if (pod)
            validate_pod(&p, a->obj, lr);
        else
            validate_claim(&p, a->obj, lr);
        if (p.n) {
            r = p.n == 1 ? ck__admission_forbidden(a, reterr, "%s", p.text)
                         : ck__admission_forbidden(a, reterr, "[%s]", p.text);
            break;
        }
    }
    json_decref(ranges);
    return r;
}

static int admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                 struct ck_err *reterr)
{
    return run(reg, a, true, reterr);
}

static int validate(struct ck__registry *reg, const struct ck__admission_attrs *a,
                    struct ck_err *reterr)
{
    return run(reg, a, false, reterr);
}

const struct ck__admission_plugin ck__admission_limit_ranger = {
    .name = "LimitRanger", .admit = admit, .validate = validate};
