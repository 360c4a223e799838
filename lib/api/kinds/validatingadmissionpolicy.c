/*
 * validatingadmissionpolicy.c - the ValidatingAdmissionPolicy kind
 * (admissionregistration.k8s.io/v1): CEL validations the API server runs on the writes
 * its matchConstraints select, once per binding (validatingadmissionpolicybinding.c).
 *
 * Mirrors Kubernetes 1.32's pkg/registry/admissionregistration/validatingadmissionpolicy:
 * cluster-scoped, a status subresource (reset on create, kept by spec writes), the
 * generation counts changes of the spec. Validation is admissionpolicy.c's; the
 * ValidatingAdmissionPolicy admission plugin (lib/apiserver/admission/policy.c) reads
 * these objects; their status (observedGeneration, typeChecking) is written by the
 * server's status controller (lib/apiserver/policy_status.c). The writer's right to read
 * the paramKind is not checked (Kubernetes' authz.go), as for the binding
 * (docs/differences.md).
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_admissionpolicy.c.
 */
#include <stdio.h>

#include "../internal.h"

static int prepare_for_create(json_t *obj)
{
    return json_object_set_new(obj, "status", json_object()) < 0 ? CK_ENOMEM : 0;
}

static const struct ck_subresource subresources[] = {
    CK__STATUS_SUBRESOURCE,
};

static const struct ck_table_column columns[] = {
    CK__NAME_COLUMN(0),
    CK__COMPUTED_COLUMN("Validations", "integer",
                        "Validations indicates the number of validation rules defined in this "
                        "configuration",
                        0),
    CK__COMPUTED_COLUMN("ParamKind", "string",
                        "ParamKind specifies the kind of resources used to parameterize this "
                        "policy",
                        0),
    CK__AGE_COLUMN,
};

/* VALIDATIONS (how many) and PARAMKIND (apiVersion/kind, or <unset>), as kube-apiserver prints. */
static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *pk = json_object_get(spec, "paramKind");
    cells[1] = json_integer((json_int_t)json_array_size(json_object_get(spec, "validations")));
    if (!pk) {
        cells[2] = json_string("<unset>");
        return;
    }
    const char *av = ck__str_at(pk, "apiVersion"), *kind = ck__str_at(pk, "kind");
    char text[400];
    snprintf(text, sizeof(text), "%s/%s", av ? av : "", kind ? kind : "");
    cells[2] = json_string(text);
}

static const char *const categories[] = {"api-extensions", NULL};

const struct ck_kind ck__kind_validatingadmissionpolicy = {
    .group = "admissionregistration.k8s.io",
    .version = "v1",
    .kind = "ValidatingAdmissionPolicy",
    .list_kind = "ValidatingAdmissionPolicyList",
    .resource = "validatingadmissionpolicies",
    .singular = "validatingadmissionpolicy",
    .categories = categories,
    .namespaced = false,
    .has_generation = true,
    .configures_admission = true,
    .admission_lists_all = true,
    .role = CK_KIND_ROLE_VALIDATING_ADMISSION_POLICY,
    .schema = "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
    .subresources = subresources,
    .n_subresources = CK__COUNT(subresources),
    .columns = columns,
    .n_columns = CK__COUNT(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .validate = ck__validate_validating_admission_policy,
};
