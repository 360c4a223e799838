/*
 * deploy_fixtures.h - Deployments, ReplicaSets and pods as JSON for the Deployment
 * controller's table tests (tests/controllers/test_deployment_*.c), shaped like the
 * helpers of kubernetes' deployment tests (newDeployment, rs, newRSWithStatus).
 *
 * Every helper returns a new reference the test frees with json_decref(). They are
 * `static inline` so a test that does not use one does not warn.
 */
#ifndef CKUBE_TESTS_DEPLOY_FIXTURES_H
#define CKUBE_TESTS_DEPLOY_FIXTURES_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../../lib/controllers/deployment/deployment.h"
#include "ckube/util.h"

/* Three creation times an hour apart, as TestScale uses. */
#define FX_OLDER "2016-05-20T00:00:00Z"
#define FX_OLD   "2016-05-20T01:00:00Z"
#define FX_NEW   "2016-05-20T02:00:00Z"

/*
 * Walks a dotted path down to the object holding its last key, creating the objects
 * on the way when `create` (obj must then be mutable); *ret_last is that key.
 */
static inline json_t *fx_walk(const json_t *obj, const char *path, bool create,
                              const char **ret_last)
{
    char key[128];
    const char *dot;
    json_t *cur = (json_t *)obj;
    while ((dot = strchr(path, '.'))) {
        size_t len = (size_t)(dot - path);
        memcpy(key, path, len);
        key[len] = '\0';
        cur = create ? ck__deploy_child(cur, key) : json_object_get(cur, key);
        path = dot + 1;
    }
    *ret_last = path;
    return cur;
}

/* Sets value (stolen) at a dotted path, creating the objects on the way. */
static inline void fx_set(json_t *obj, const char *path, json_t *value)
{
    const char *last;
    json_t *holder = fx_walk(obj, path, true, &last);
    json_object_set_new(holder, last, value);
}

/* The value at a dotted path, or NULL. */
static inline json_t *fx_get(const json_t *obj, const char *path)
{
    const char *last;
    const json_t *holder = fx_walk(obj, path, false, &last);
    return json_object_get(holder, last);
}

static inline void fx_annotate(json_t *obj, const char *key, const char *value)
{
    json_t *m = json_object_get(obj, "metadata");
    if (!json_object_get(m, "annotations"))
        json_object_set_new(m, "annotations", json_object());
    json_object_set_new(json_object_get(m, "annotations"), key, json_string(value));
}

/*
 * newDeployment: a RollingUpdate Deployment with maxSurge and maxUnavailable (stolen;
 * NULL for 0), template and selector labels foo=bar, one container.
 */
static inline json_t *fx_deployment(const char *name, int replicas, json_t *max_surge,
                                    json_t *max_unavailable)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:i, s:{s:s, s:{s:o, s:o}}, "
                     "s:{s:{s:s}}, s:{s:{s:{s:s}}, s:{s:[{s:s}]}}}}",
                     "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", name,
                     "namespace", "default", "uid", "deployment-uid", "spec", "replicas", replicas,
                     "strategy", "type", "RollingUpdate", "rollingUpdate", "maxSurge",
                     max_surge ? max_surge : json_integer(0), "maxUnavailable",
                     max_unavailable ? max_unavailable : json_integer(0), "selector", "matchLabels",
                     "foo", "bar", "template", "metadata", "labels", "foo", "bar", "spec",
                     "containers", "image", "foo/bar");
}

/* rs: a ReplicaSet with spec.replicas and a creation time (NULL: none). */
static inline json_t *fx_rs(const char *name, int replicas, const char *created)
{
    json_t *rs = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:i, s:{}}}", "apiVersion", "apps/v1",
                           "kind", "ReplicaSet", "metadata", "name", name, "namespace", "default",
                           "uid", name, "spec", "replicas", replicas, "template");
    if (created)
        fx_set(rs, "metadata.creationTimestamp", json_string(created));
    return rs;
}

/* newRSWithStatus: spec.replicas and status.replicas. */
static inline json_t *fx_rs_status(const char *name, int spec, int status)
{
    json_t *rs = fx_rs(name, spec, NULL);
    fx_set(rs, "status.replicas", json_integer(status));
    return rs;
}

/* Nanoseconds of an RFC 3339 time (asserting it parses). */
static inline int64_t fx_ns(const char *rfc3339)
{
    int64_t ns = 0;
    if (ck__deploy_parse_time(rfc3339, &ns) < 0)
        return INT64_MIN;
    return ns;
}

static inline void fx_decref_all(json_t **objs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        json_decref(objs[i]);
}

#endif /* CKUBE_TESTS_DEPLOY_FIXTURES_H */
