/*
 * lease.c - the Lease kind (coordination.k8s.io/v1): node heartbeats in
 * kube-node-lease and leader election.
 *
 * Mirrors Kubernetes' pkg/registry/coordination/lease and
 * pkg/apis/coordination/validation: no status, no generation; a lease
 * duration and a transition count that are given must be positive and not
 * negative. The printer shows NAME, HOLDER and AGE as kubectl does.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_kinds.c (descriptor) and test_strategy.c
 * (validation), and by tests/e2e/test_scheduler.sh, where simulated nodes
 * renew their leases.
 */
#include <stdio.h>

#include "../internal.h"

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *duration = json_object_get(spec, "leaseDurationSeconds");
    const json_t *transitions = json_object_get(spec, "leaseTransitions");
    char value[32];
    if (duration && json_integer_value(duration) <= 0) {
        snprintf(value, sizeof(value), "%lld", (long long)json_integer_value(duration));
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.leaseDurationSeconds", value, false,
                            "must be greater than 0");
    }
    if (transitions && json_integer_value(transitions) < 0) {
        snprintf(value, sizeof(value), "%lld", (long long)json_integer_value(transitions));
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.leaseTransitions", value, false,
                            "must be greater than or equal to 0");
    }
}

enum {
    COL_NAME,
    COL_HOLDER,
    COL_AGE,
};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_HOLDER] = {"Holder", "string", "", "The identity of the holder of the lease.", 0,
                    ".spec.holderIdentity", CK_CELL_ABSENT_EMPTY, false},
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_lease = {
    .group = "coordination.k8s.io",
    .version = "v1",
    .kind = "Lease",
    .list_kind = "LeaseList",
    .resource = "leases",
    .singular = "lease",
    .namespaced = true,
    .role = CK_KIND_ROLE_LEASE,
    .schema = "io.k8s.api.coordination.v1.Lease",
    CK__KIND_COLUMNS(columns),
    .validate = validate,
};
