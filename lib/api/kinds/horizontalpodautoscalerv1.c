/*
 * horizontalpodautoscalerv1.c - the HorizontalPodAutoscaler kind in autoscaling/v1,
 * the version kubectl 1.32's `kubectl autoscale` writes.
 *
 * Stored in autoscaling/v2, as kube-apiserver stores it: an object written through
 * v1 is converted to v2 before it is stored and converted back when it is read
 * (ck__hpa_v1_to_v2 and ck__hpa_v2_to_v1, horizontalpodautoscaler.c, after
 * Kubernetes' pkg/apis/autoscaling/v1/conversion.go). v1 defaults minReplicas to 1
 * (pkg/apis/autoscaling/v1/defaults.go); validation and the printer are v2's, run
 * on the object's v2 form, as Kubernetes runs them on the internal version.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_horizontalpodautoscaler.c and e2e.hpa.
 */
#include "../internal.h"
#include "ckube/internal/util.h"

static int defaults(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    if (json_is_object(spec) && !json_object_get(spec, "minReplicas") &&
        json_object_set_new(spec, "minReplicas", json_integer(1)) < 0)
        return CK_ENOMEM;
    return 0;
}

static int prepare_for_create(json_t *obj)
{
    return json_object_set_new(obj, "status", json_object()) < 0 ? CK_ENOMEM : 0;
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    ck__validate_converted(obj, old, ck__hpa_v1_to_v2, ck__hpa_validate, errs);
}

static void cells(const json_t *obj, long long now, json_t **row)
{
    ck__cells_converted(obj, now, ck__hpa_v1_to_v2, ck__hpa_cells, row);
}

const struct ck_kind ck__kind_horizontalpodautoscalerv1 = {
    CK__HPA_KIND_COMMON,
    .version = "v1",
    .schema = "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler",
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .defaults = defaults,
    .validate = validate,
    .storage_api_version = "autoscaling/v2",
    .to_storage = ck__hpa_v1_to_v2,
    .from_storage = ck__hpa_v2_to_v1,
};
