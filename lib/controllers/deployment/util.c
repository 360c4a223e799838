/*
 * util.c - the Deployment controller's shared arithmetic and bookkeeping (kubernetes
 * pkg/controller/deployment/util/deployment_util.go, and the ReplicaSet sort orders of
 * pkg/controller/controller_utils.go).
 *
 * What lives here: reading maxSurge/maxUnavailable (ints or percentages), how many
 * replicas the new ReplicaSet may reach, the revision and replica annotations a
 * Deployment keeps on its ReplicaSets, which ReplicaSet is "new" (same pod template but
 * for the pod-template-hash label), proportional shares for scaling, the predicates
 * that drive the Progressing condition, condition bookkeeping and the template hash.
 *
 * Everything is pure: inputs are borrowed JSON objects and plain values (the time
 * included), outputs are numbers, booleans or objects the caller owns. Functions that
 * modify an object say so and take it non-const.
 *
 * The template hash deliberately differs from Kubernetes': it hashes a canonical JSON
 * form of the template instead of Go's spew dump (docs/differences.md).
 *
 * Threading: no state of its own.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "ckube/util.h"
#include "deployment.h"

/* ---- accessors ----------------------------------------------------------------- */

static const json_t *meta(const json_t *obj)
{
    return json_object_get(obj, "metadata");
}

static int32_t clamp32(json_int_t v)
{
    if (v > INT32_MAX)
        return INT32_MAX;
    if (v < INT32_MIN)
        return INT32_MIN;
    return (int32_t)v;
}

int32_t ck__deploy_spec_replicas(const json_t *obj)
{
    const json_t *r = json_object_get(json_object_get(obj, "spec"), "replicas");
    return json_is_integer(r) ? clamp32(json_integer_value(r)) : 1;
}

int32_t ck__deploy_status_count(const json_t *obj, const char *field)
{
    return clamp32(json_integer_value(json_object_get(json_object_get(obj, "status"), field)));
}

const char *ck__deploy_name(const json_t *obj)
{
    return ck__meta_str(obj, "name");
}

const char *ck__deploy_uid(const json_t *obj)
{
    return ck__meta_str(obj, "uid");
}

const char *ck__deploy_annotation(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(meta(obj), "annotations"), key));
}

json_t *ck__deploy_child(json_t *obj, const char *key)
{
    json_t *child = json_object_get(obj, key);
    if (!json_is_object(child)) {
        child = json_object();
        json_object_set_new(obj, key, child);
    }
    return child;
}

/* The object's annotations, created when missing. */
static json_t *annotations_of(json_t *obj)
{
    return ck__deploy_child(ck__deploy_child(obj, "metadata"), "annotations");
}

int ck__deploy_parse_time(const char *s, int64_t *ret_ns)
{
    int64_t sec;
    long usec;
    if (ck__time_parse(s, &sec, &usec) != 0)
        return CK_EINVAL;
    *ret_ns = sec * CK_DEPLOY_NS_PER_SEC + (int64_t)usec * 1000;
    return 0;
}

int64_t ck__deploy_creation_ns(const json_t *obj)
{
    int64_t ns = 0;
    ck__deploy_parse_time(json_string_value(json_object_get(meta(obj), "creationTimestamp")), &ns);
    return ns;
}

/* ---- strategy arithmetic -------------------------------------------------------- */

static int64_t div_floor(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t div_ceil(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
}

int ck__deploy_intstr_value(const json_t *v, int32_t total, bool round_up, int32_t *ret)
{
    if (!v || json_is_null(v)) {
        *ret = 0;
        return 0;
    }
    if (json_is_integer(v)) {
        *ret = clamp32(json_integer_value(v));
        return 0;
    }
    const char *s = json_string_value(v);
    size_t len = s ? strlen(s) : 0;
    if (len < 2 || s[len - 1] != '%')
        return CK_EINVAL;
    char *end;
    errno = 0;
    long long pct = strtoll(s, &end, 10);
    if (errno || end != s + len - 1 || pct > INT32_MAX || pct < INT32_MIN)
        return CK_EINVAL;
    int64_t scaled = (int64_t)pct * total;
    *ret = clamp32(round_up ? div_ceil(scaled, 100) : div_floor(scaled, 100));
    return 0;
}

int ck__deploy_resolve_fenceposts(const json_t *max_surge, const json_t *max_unavailable,
                                  int32_t desired, int32_t *ret_surge, int32_t *ret_unavailable)
{
    int32_t surge, unavailable;
    *ret_surge = 0;
    *ret_unavailable = 0;
    if (ck__deploy_intstr_value(max_surge, desired, true, &surge) < 0 ||
        ck__deploy_intstr_value(max_unavailable, desired, false, &unavailable) < 0)
        return CK_EINVAL;
    /* Rounding down may turn a percentage into 0; surge may fail on quota: allow one. */
    if (surge == 0 && unavailable == 0)
        unavailable = 1;
    *ret_surge = surge;
    *ret_unavailable = unavailable;
    return 0;
}

static const json_t *strategy(const json_t *d)
{
    return json_object_get(json_object_get(d, "spec"), "strategy");
}

bool ck__deploy_is_rolling_update(const json_t *d)
{
    const char *type = json_string_value(json_object_get(strategy(d), "type"));
    return type && strcmp(type, "RollingUpdate") == 0;
}

static int fenceposts(const json_t *d, int32_t *ret_surge, int32_t *ret_unavailable)
{
    const json_t *ru = json_object_get(strategy(d), "rollingUpdate");
    return ck__deploy_resolve_fenceposts(json_object_get(ru, "maxSurge"),
                                         json_object_get(ru, "maxUnavailable"),
                                         ck__deploy_spec_replicas(d), ret_surge, ret_unavailable);
}

int32_t ck__deploy_max_surge(const json_t *d)
{
    int32_t surge, unavailable;
    if (!ck__deploy_is_rolling_update(d))
        return 0;
    fenceposts(d, &surge, &unavailable); /* a bad value is caught by validation; reads 0 */
    return surge;
}

int32_t ck__deploy_max_unavailable(const json_t *d)
{
    int32_t surge, unavailable, replicas = ck__deploy_spec_replicas(d);
    if (!ck__deploy_is_rolling_update(d) || replicas == 0)
        return 0;
    fenceposts(d, &surge, &unavailable);
    return unavailable > replicas ? replicas : unavailable;
}

int32_t ck__deploy_min_available(const json_t *d)
{
    if (!ck__deploy_is_rolling_update(d))
        return 0;
    return ck__deploy_spec_replicas(d) - ck__deploy_max_unavailable(d);
}

int ck__deploy_new_rs_new_replicas(const json_t *d, const json_t *const *all, size_t n,
                                   const json_t *new_rs, int32_t *ret)
{
    const char *type = json_string_value(json_object_get(strategy(d), "type"));
    int32_t replicas = ck__deploy_spec_replicas(d);
    if (type && strcmp(type, "Recreate") == 0) {
        *ret = replicas;
        return 0;
    }
    if (!type || strcmp(type, "RollingUpdate") != 0)
        return CK_EINVAL;
    int32_t surge;
    const json_t *ru = json_object_get(strategy(d), "rollingUpdate");
    if (ck__deploy_intstr_value(json_object_get(ru, "maxSurge"), replicas, true, &surge) < 0)
        return CK_EINVAL;
    int32_t current = ck__deploy_replica_count(all, n);
    int32_t new_replicas = ck__deploy_spec_replicas(new_rs);
    int32_t max_total = replicas + surge;
    if (current >= max_total) {
        *ret = new_replicas;
        return 0;
    }
    int32_t up = max_total - current;
    if (up > replicas - new_replicas)
        up = replicas - new_replicas;
    *ret = new_replicas + up;
    return 0;
}

bool ck__deploy_annotation_int32(const json_t *obj, const char *key, int32_t *ret)
{
    const char *s = ck__deploy_annotation(obj, key);
    *ret = 0;
    if (!s || !*s || *s < '0' || *s > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > INT32_MAX)
        return false;
    *ret = (int32_t)v;
    return true;
}

bool ck__deploy_is_saturated(const json_t *d, const json_t *rs)
{
    int32_t desired;
    if (!rs || !ck__deploy_annotation_int32(rs, CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION, &desired))
        return false;
    int32_t replicas = ck__deploy_spec_replicas(d);
    return ck__deploy_spec_replicas(rs) == replicas && desired == replicas &&
           ck__deploy_status_count(rs, "availableReplicas") == replicas;
}

int32_t ck__deploy_replica_count(const json_t *const *rss, size_t n)
{
    int32_t total = 0;
    for (size_t i = 0; i < n; i++)
        if (rss[i])
            total += ck__deploy_spec_replicas(rss[i]);
    return total;
}

static int32_t status_sum(const json_t *const *rss, size_t n, const char *field)
{
    int32_t total = 0;
    for (size_t i = 0; i < n; i++)
        if (rss[i])
            total += ck__deploy_status_count(rss[i], field);
    return total;
}

int32_t ck__deploy_actual_replica_count(const json_t *const *rss, size_t n)
{
    return status_sum(rss, n, "replicas");
}

int32_t ck__deploy_ready_replica_count(const json_t *const *rss, size_t n)
{
    return status_sum(rss, n, "readyReplicas");
}

int32_t ck__deploy_available_replica_count(const json_t *const *rss, size_t n)
{
    return status_sum(rss, n, "availableReplicas");
}

/* A spec field that is set and not math.MaxInt32 ("unlimited"). */
static bool spec_limit_set(const json_t *d, const char *field)
{
    const json_t *v = json_object_get(json_object_get(d, "spec"), field);
    return json_is_integer(v) && json_integer_value(v) != INT32_MAX;
}

bool ck__deploy_has_progress_deadline(const json_t *d)
{
    return spec_limit_set(d, "progressDeadlineSeconds");
}

bool ck__deploy_has_revision_history_limit(const json_t *d)
{
    return spec_limit_set(d, "revisionHistoryLimit");
}

/* ---- revisions and annotations --------------------------------------------------- */

/* strconv.ParseInt(s, 10, 64): an optional sign, then decimal digits only. */
static int parse_int64(const char *s, int64_t *ret)
{
    if (!s)
        return CK_EINVAL;
    const char *digits = s + (*s == '+' || *s == '-');
    if (*digits < '0' || *digits > '9')
        return CK_EINVAL;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return CK_EINVAL;
    *ret = v;
    return 0;
}

int ck__deploy_revision(const json_t *obj, int64_t *ret)
{
    const char *v = ck__deploy_annotation(obj, CK_DEPLOY_REVISION_ANNOTATION);
    if (!v) {
        *ret = 0;
        return 0;
    }
    return parse_int64(v, ret);
}

int64_t ck__deploy_max_revision(const json_t *const *rss, size_t n)
{
    int64_t max = 0, v;
    for (size_t i = 0; i < n; i++)
        if (rss[i] && ck__deploy_revision(rss[i], &v) == 0 && v > max)
            max = v;
    return max;
}

int64_t ck__deploy_last_revision(const json_t *const *rss, size_t n)
{
    int64_t max = 0, second = 0, v;
    for (size_t i = 0; i < n; i++) {
        if (!rss[i] || ck__deploy_revision(rss[i], &v) < 0)
            continue;
        if (v >= max) {
            second = max;
            max = v;
        } else if (v > second) {
            second = v;
        }
    }
    return second;
}

bool ck__deploy_skip_copy_annotation(const char *key)
{
    static const char *const skip[] = {
        CK_DEPLOY_LAST_APPLIED_ANNOTATION,     CK_DEPLOY_REVISION_ANNOTATION,
        CK_DEPLOY_REVISION_HISTORY_ANNOTATION, CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION,
        CK_DEPLOY_MAX_REPLICAS_ANNOTATION,     CK_DEPLOY_ROLLBACK_TO_ANNOTATION,
    };
    for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
        if (strcmp(key, skip[i]) == 0)
            return true;
    return false;
}

static bool set_annotation(json_t *obj, const char *key, const char *value)
{
    json_t *a = annotations_of(obj);
    const char *cur = json_string_value(json_object_get(a, key));
    if (cur && strcmp(cur, value) == 0)
        return false;
    json_object_set_new(a, key, json_string(value));
    return true;
}

/* copyDeploymentAnnotationsToReplicaSet */
static bool copy_annotations_to_rs(const json_t *d, json_t *rs)
{
    bool changed = false;
    const char *key;
    json_t *value;
    json_t *from = json_object_get(meta(d), "annotations");
    annotations_of(rs);
    json_object_foreach(from, key, value)
    {
        if (ck__deploy_skip_copy_annotation(key) || !json_is_string(value))
            continue;
        changed |= set_annotation(rs, key, json_string_value(value));
    }
    return changed;
}

/* Appends old_revision to the history, dropping the oldest entries beyond limit chars. */
static void append_revision_history(json_t *rs, const char *old_revision, size_t limit)
{
    const char *history = ck__deploy_annotation(rs, CK_DEPLOY_REVISION_HISTORY_ANNOTATION);
    if (!history || !*history || *history == ',') {
        set_annotation(rs, CK_DEPLOY_REVISION_HISTORY_ANNOTATION, old_revision);
        return;
    }
    size_t total = strlen(history) + strlen(old_revision) + 1;
    const char *start = history;
    while (total > limit && start) {
        const char *comma = strchr(start, ',');
        size_t entry = comma ? (size_t)(comma - start) : strlen(start);
        total -= entry + 1;
        start = comma ? comma + 1 : NULL;
    }
    if (total > limit)
        return; /* Kubernetes logs "not appending revision due to length limit" */
    size_t keep = start ? strlen(start) : 0, len = strlen(old_revision);
    char *joined = ck__malloc(keep + len + 2);
    if (!joined)
        return; /* the history misses one entry; the revision itself is right */
    if (keep) {
        memcpy(joined, start, keep);
        joined[keep++] = ',';
    }
    memcpy(joined + keep, old_revision, len + 1);
    set_annotation(rs, CK_DEPLOY_REVISION_HISTORY_ANNOTATION, joined);
    free(joined);
}

bool ck__deploy_set_new_rs_annotations(const json_t *d, json_t *new_rs, const char *new_revision,
                                       bool exists, size_t history_limit_chars)
{
    bool changed = copy_annotations_to_rs(d, new_rs);
    const char *old = ck__deploy_annotation(new_rs, CK_DEPLOY_REVISION_ANNOTATION);
    int64_t old_rev = 0, new_rev;
    if (old && parse_int64(old, &old_rev) < 0) {
        if (*old)
            return false; /* a malformed revision is left for a human */
        old_rev = 0;
    }
    if (parse_int64(new_revision, &new_rev) < 0)
        return false;
    if (old_rev < new_rev) {
        /* old parsed as an int64, so it is short; keep it before it is replaced */
        char old_copy[32];
        if (old)
            snprintf(old_copy, sizeof(old_copy), "%s", old);
        set_annotation(new_rs, CK_DEPLOY_REVISION_ANNOTATION, new_revision);
        changed = true;
        /* It had a revision and gets a newer one: a rollback to it; keep the history. */
        if (old)
            append_revision_history(new_rs, old_copy, history_limit_chars);
    }
    if (!exists) {
        int32_t replicas = ck__deploy_spec_replicas(d);
        changed |= ck__deploy_set_replicas_annotations(new_rs, replicas,
                                                       replicas + ck__deploy_max_surge(d));
    }
    return changed;
}

bool ck__deploy_set_replicas_annotations(json_t *rs, int32_t desired, int32_t max)
{
    char buf[16];
    bool changed = false;
    snprintf(buf, sizeof(buf), "%" PRId32, desired);
    changed |= set_annotation(rs, CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION, buf);
    snprintf(buf, sizeof(buf), "%" PRId32, max);
    changed |= set_annotation(rs, CK_DEPLOY_MAX_REPLICAS_ANNOTATION, buf);
    return changed;
}

bool ck__deploy_replicas_annotations_need_update(const json_t *rs, int32_t desired, int32_t max)
{
    char buf[16];
    const char *cur;
    snprintf(buf, sizeof(buf), "%" PRId32, desired);
    cur = ck__deploy_annotation(rs, CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION);
    if (!cur || strcmp(cur, buf) != 0)
        return true;
    snprintf(buf, sizeof(buf), "%" PRId32, max);
    cur = ck__deploy_annotation(rs, CK_DEPLOY_MAX_REPLICAS_ANNOTATION);
    return !cur || strcmp(cur, buf) != 0;
}

bool ck__deploy_set_revision(json_t *d, const char *revision)
{
    return set_annotation(d, CK_DEPLOY_REVISION_ANNOTATION, revision);
}

void ck__deploy_set_annotations_to(json_t *d, const json_t *rs)
{
    json_t *a = annotations_of(d);
    const char *key;
    json_t *value;
    void *tmp;
    json_object_foreach_safe(a, tmp, key, value)
    {
        if (!ck__deploy_skip_copy_annotation(key))
            json_object_del(a, key);
    }
    json_object_foreach(json_object_get(meta(rs), "annotations"), key, value)
    {
        if (!ck__deploy_skip_copy_annotation(key))
            json_object_set(a, key, value);
    }
}

/* ---- templates ---------------------------------------------------------------------- */

static const json_t *template_of(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "spec"), "template");
}

/* A copy of a template without the hash label (and without labels left empty). */
static json_t *strip_hash(const json_t *tmpl)
{
    json_t *copy = tmpl ? ck__json_copy(tmpl) : json_object();
    json_t *m = json_object_get(copy, "metadata");
    json_t *labels = json_object_get(m, "labels");
    json_object_del(labels, CK_DEPLOY_HASH_LABEL);
    /* apimachinery's semantic equality takes an empty map for a missing one */
    if (labels && json_object_size(labels) == 0)
        json_object_del(m, "labels");
    return copy;
}

bool ck__deploy_equal_ignore_hash(const json_t *t1, const json_t *t2)
{
    json_t *a = strip_hash(t1), *b = strip_hash(t2);
    bool eq = a && b && json_equal(a, b);
    json_decref(a);
    json_decref(b);
    return eq;
}

/* Copies the non-NULL entries of rss into out, sorted by creation; returns how many. */
static size_t sorted_by_creation(const json_t *const *rss, size_t n, const json_t **out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (rss[i])
            out[m++] = rss[i];
    ck__deploy_sort(out, m, ck__deploy_cmp_by_creation);
    return m;
}

const json_t *ck__deploy_find_new_rs(const json_t *d, const json_t *const *rss, size_t n)
{
    const json_t *found = NULL;
    /* Several may match (kubernetes#40415): the oldest wins, deterministically. */
    for (size_t i = 0; i < n; i++)
        if (rss[i] && (!found || ck__deploy_cmp_by_creation(rss[i], found) < 0) &&
            ck__deploy_equal_ignore_hash(template_of(rss[i]), template_of(d)))
            found = rss[i];
    return found;
}

void ck__deploy_find_old_rss(const json_t *d, const json_t *const *rss, size_t n,
                             const json_t **ret_all, size_t *ret_n_all, const json_t **ret_required,
                             size_t *ret_n_required)
{
    const json_t *new_rs = ck__deploy_find_new_rs(d, rss, n);
    size_t m = sorted_by_creation(rss, n, ret_all), n_all = 0, n_required = 0;
    for (size_t i = 0; i < m; i++) {
        const json_t *rs = ret_all[i];
        if (new_rs && rs == new_rs)
            continue;
        ret_all[n_all++] = rs;
        if (ck__deploy_spec_replicas(rs) != 0)
            ret_required[n_required++] = rs;
    }
    *ret_n_all = n_all;
    *ret_n_required = n_required;
}

const json_t *ck__deploy_find_active_or_latest(const json_t *new_rs, const json_t *const *old,
                                               size_t n_old)
{
    const json_t *active = NULL, *newest_old = NULL;
    size_t n_active = 0;
    if (!new_rs && n_old == 0)
        return NULL;
    for (size_t i = 0; i < n_old; i++) {
        if (!old[i])
            continue;
        if (!newest_old || ck__deploy_cmp_by_creation(old[i], newest_old) > 0)
            newest_old = old[i];
        if (ck__deploy_spec_replicas(old[i]) > 0) {
            active = old[i];
            n_active++;
        }
    }
    if (new_rs && ck__deploy_spec_replicas(new_rs) > 0) {
        active = new_rs;
        n_active++;
    }
    if (n_active == 0)
        return new_rs ? new_rs : newest_old; /* none active: the newest */
    return n_active == 1 ? active : NULL;
}

void ck__deploy_set_from_rs_template(json_t *d, const json_t *tmpl)
{
    json_t *spec = ck__deploy_child(d, "spec");
    json_t *copy = tmpl ? ck__json_copy(tmpl) : json_object();
    json_object_del(json_object_get(json_object_get(copy, "metadata"), "labels"),
                    CK_DEPLOY_HASH_LABEL);
    json_object_set_new(spec, "template", copy);
}

const char *ck__deploy_template_hash(const json_t *tmpl, const json_t *collision_count, char *buf,
                                     size_t size)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789"; /* SafeEncodeString */
    uint32_t h = 2166136261u;                                     /* FNV-32a offset basis */
    char *text =
        json_dumps(tmpl ? tmpl : json_null(), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    for (const unsigned char *p = (const unsigned char *)(text ? text : ""); *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    free(text);
    if (json_is_integer(collision_count)) {
        /* as Kubernetes: the count little-endian in the first 4 of 8 bytes */
        uint32_t c = (uint32_t)json_integer_value(collision_count);
        for (int i = 0; i < 8; i++) {
            h ^= i < 4 ? (c >> (8 * i)) & 0xffu : 0u;
            h *= 16777619u;
        }
    }
    char digits[16];
    int len = snprintf(digits, sizeof(digits), "%" PRIu32, h);
    size_t i = 0;
    for (; i < (size_t)len && i + 1 < size; i++)
        buf[i] = alphabet[(unsigned char)digits[i] % (sizeof(alphabet) - 1)];
    if (size)
        buf[i] = '\0';
    return buf;
}

/* ---- proportions -------------------------------------------------------------------- */

/* k8s.io/utils/integer.RoundToInt32 of a / b (b > 0): half away from zero. */
static int32_t round_div(int64_t a, int64_t b)
{
    int64_t q = a >= 0 ? (2 * a + b) / (2 * b) : -((-2 * a + b) / (2 * b));
    return clamp32(q);
}

int32_t ck__deploy_rs_fraction(const json_t *rs, const json_t *d)
{
    int32_t replicas = ck__deploy_spec_replicas(d), rs_replicas = ck__deploy_spec_replicas(rs);
    if (replicas == 0)
        return -rs_replicas; /* scaling to zero: all of it */
    int32_t max_now = replicas + ck__deploy_max_surge(d), max_before;
    if (!ck__deploy_annotation_int32(rs, CK_DEPLOY_MAX_REPLICAS_ANNOTATION, &max_before) ||
        max_before == 0) {
        /* annotation removed or zeroed by someone: fall back to the current size */
        max_before = ck__deploy_status_count(d, "replicas");
        if (max_before == 0)
            return 0;
    }
    return round_div((int64_t)rs_replicas * max_now, max_before) - rs_replicas;
}

int32_t ck__deploy_rs_proportion(const json_t *rs, const json_t *d, int32_t to_add, int32_t added)
{
    if (!rs || ck__deploy_spec_replicas(rs) == 0 || to_add == 0 || to_add == added)
        return 0;
    int32_t fraction = ck__deploy_rs_fraction(rs, d), allowed = to_add - added;
    if (to_add > 0)
        return fraction < allowed ? fraction : allowed; /* never add more than allowed */
    return fraction > allowed ? fraction : allowed;     /* never remove more than allowed */
}

/* ---- progress predicates ------------------------------------------------------------ */

static int64_t gen_of(const json_t *obj)
{
    return json_integer_value(json_object_get(meta(obj), "generation"));
}

static int32_t count(const json_t *status, const char *field)
{
    return clamp32(json_integer_value(json_object_get(status, field)));
}

bool ck__deploy_complete(const json_t *d, const json_t *st)
{
    int32_t replicas = ck__deploy_spec_replicas(d);
    return count(st, "updatedReplicas") == replicas && count(st, "replicas") == replicas &&
           count(st, "availableReplicas") == replicas &&
           json_integer_value(json_object_get(st, "observedGeneration")) >= gen_of(d);
}

bool ck__deploy_progressing(const json_t *d, const json_t *st)
{
    const json_t *old = json_object_get(d, "status");
    int32_t old_old = count(old, "replicas") - count(old, "updatedReplicas");
    int32_t new_old = count(st, "replicas") - count(st, "updatedReplicas");
    return count(st, "updatedReplicas") > count(old, "updatedReplicas") || new_old < old_old ||
           count(st, "readyReplicas") > count(old, "readyReplicas") ||
           count(st, "availableReplicas") > count(old, "availableReplicas");
}

static bool str_eq(const json_t *v, const char *s)
{
    const char *t = json_string_value(v);
    return t && strcmp(t, s) == 0;
}

bool ck__deploy_timed_out(const json_t *d, const json_t *new_status, int64_t now_ns)
{
    if (!ck__deploy_has_progress_deadline(d))
        return false;
    const json_t *c = ck__deploy_condition_get(new_status, CK_DEPLOY_COND_PROGRESSING);
    if (!c)
        return false;
    /* a finished rollout is not re-judged while the cache catches up */
    if (str_eq(json_object_get(c, "reason"), CK_DEPLOY_REASON_NEW_RS_AVAILABLE))
        return false;
    if (str_eq(json_object_get(c, "reason"), CK_DEPLOY_REASON_TIMED_OUT))
        return true;
    int64_t from = 0;
    ck__deploy_parse_time(json_string_value(json_object_get(c, "lastUpdateTime")), &from);
    int64_t pds =
        json_integer_value(json_object_get(json_object_get(d, "spec"), "progressDeadlineSeconds"));
    return from + pds * CK_DEPLOY_NS_PER_SEC < now_ns;
}

/* ---- conditions --------------------------------------------------------------------- */

json_t *ck__deploy_condition_new(const char *type, const char *status, const char *reason,
                                 const char *message, int64_t now_ns)
{
    char ts[32];
    ck_rfc3339(div_floor(now_ns, CK_DEPLOY_NS_PER_SEC), ts, sizeof(ts));
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", type, "status", status,
                     "lastUpdateTime", ts, "lastTransitionTime", ts, "reason", reason ? reason : "",
                     "message", message ? message : "");
}

const json_t *ck__deploy_condition_get(const json_t *status, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(status, "conditions"), i, c)
    {
        if (str_eq(json_object_get(c, "type"), type))
            return c;
    }
    return NULL;
}

static bool same_string(const json_t *a, const json_t *b)
{
    const char *x = json_string_value(a), *y = json_string_value(b);
    return strcmp(x ? x : "", y ? y : "") == 0;
}

void ck__deploy_condition_set(json_t *status, json_t *cond)
{
    const char *type = json_string_value(json_object_get(cond, "type"));
    const json_t *cur = ck__deploy_condition_get(status, type ? type : "");
    if (cur && same_string(json_object_get(cur, "status"), json_object_get(cond, "status")) &&
        same_string(json_object_get(cur, "reason"), json_object_get(cond, "reason"))) {
        json_decref(cond);
        return;
    }
    /* the status did not change: neither did the transition time */
    if (cur && same_string(json_object_get(cur, "status"), json_object_get(cond, "status"))) {
        json_t *t = json_object_get(cur, "lastTransitionTime");
        if (t)
            json_object_set(cond, "lastTransitionTime", t);
        else
            json_object_del(cond, "lastTransitionTime");
    }
    ck__deploy_condition_remove(status, type ? type : "");
    json_t *list = json_object_get(status, "conditions");
    if (!json_is_array(list)) {
        list = json_array();
        json_object_set_new(status, "conditions", list);
    }
    json_array_append_new(list, cond);
}

void ck__deploy_condition_remove(json_t *status, const char *type)
{
    json_t *list = json_object_get(status, "conditions");
    for (size_t i = json_array_size(list); i-- > 0;)
        if (str_eq(json_object_get(json_array_get(list, i), "type"), type))
            json_array_remove(list, i);
    /* Kubernetes filters into a nil slice: an empty list is omitted */
    if (list && json_array_size(list) == 0)
        json_object_del(status, "conditions");
}

json_t *ck__deploy_condition_from_rs(const json_t *rs_cond)
{
    json_t *c = json_object();
    static const char *const copied[] = {"type", "status", "reason", "message"};
    for (size_t i = 0; i < sizeof(copied) / sizeof(copied[0]); i++) {
        json_t *v = json_object_get(rs_cond, copied[i]);
        if (v)
            json_object_set(c, copied[i], v);
    }
    json_t *t = json_object_get(rs_cond, "lastTransitionTime");
    if (t) {
        json_object_set(c, "lastUpdateTime", t);
        json_object_set(c, "lastTransitionTime", t);
    }
    return c;
}

/* ---- sorting -------------------------------------------------------------------------- */

int ck__deploy_cmp_by_creation(const json_t *a, const json_t *b)
{
    int64_t ta = ck__deploy_creation_ns(a), tb = ck__deploy_creation_ns(b);
    if (ta != tb)
        return ta < tb ? -1 : 1;
    const char *na = ck__deploy_name(a), *nb = ck__deploy_name(b);
    return strcmp(na ? na : "", nb ? nb : "");
}

int ck__deploy_cmp_by_size_older(const json_t *a, const json_t *b)
{
    int32_t ra = ck__deploy_spec_replicas(a), rb = ck__deploy_spec_replicas(b);
    if (ra != rb)
        return ra > rb ? -1 : 1;
    return ck__deploy_cmp_by_creation(a, b);
}

int ck__deploy_cmp_by_size_newer(const json_t *a, const json_t *b)
{
    int32_t ra = ck__deploy_spec_replicas(a), rb = ck__deploy_spec_replicas(b);
    if (ra != rb)
        return ra > rb ? -1 : 1;
    return ck__deploy_cmp_by_creation(b, a);
}

int ck__deploy_cmp_by_revision(const json_t *a, const json_t *b)
{
    int64_t ra, rb;
    if (ck__deploy_revision(a, &ra) < 0 || ck__deploy_revision(b, &rb) < 0 || ra == rb)
        return ck__deploy_cmp_by_creation(a, b);
    return ra < rb ? -1 : 1;
}

void ck__deploy_sort(const json_t **rss, size_t n, ck__deploy_rs_cmp cmp)
{
    /* insertion sort: stable, and a Deployment has a handful of ReplicaSets */
    for (size_t i = 1; i < n; i++) {
        const json_t *x = rss[i];
        size_t j = i;
        for (; j > 0 && cmp(rss[j - 1], x) > 0; j--)
            rss[j] = rss[j - 1];
        rss[j] = x;
    }
}
