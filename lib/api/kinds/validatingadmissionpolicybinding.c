/*
 * validatingadmissionpolicybinding.c - the ValidatingAdmissionPolicyBinding kind
 * (admissionregistration.k8s.io/v1): binds a ValidatingAdmissionPolicy to the requests
 * its matchResources select, with its parameters (paramRef) and what a failed
 * validation does (validationActions: Deny, Warn, Audit).
 *
 * Mirrors Kubernetes 1.32's
 * pkg/registry/admissionregistration/validatingadmissionpolicybinding: cluster-scoped,
 * no status, the generation counts changes of the spec. Validation is admissionpolicy.c's.
 * Kubernetes also refuses a binding whose writer may not read the policy's paramKind
 * (an authorization check at create); ckube does not (docs/differences.md).
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_admissionpolicy.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../internal.h"

static const struct ck_table_column columns[] = {
    CK__NAME_COLUMN(0),
    {"PolicyName", "string", "",
     "PolicyName indicates the policy definition which the policy "
     "binding binded to",
     0, ".spec.policyName", CK_CELL_ABSENT_NULL, false},
    CK__COMPUTED_COLUMN("ParamRef", "string",
                        "ParamRef indicates the param resource which sets the configration param",
                        0),
    CK__AGE_COLUMN,
};

/*
 * PARAMREF as kube-apiserver prints it: namespace/name (namespace "*" when none is given), the
 * selector (in its text form), else <unset>.
 */
static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const json_t *ref = json_object_get(json_object_get(obj, "spec"), "paramRef");
    const char *name = ck__str_at(ref, "name"), *ns = ck__str_at(ref, "namespace");
    const json_t *selector = json_object_get(ref, "selector");
    char text[600];
    snprintf(text, sizeof(text), "<unset>");
    if (name && *name) {
        snprintf(text, sizeof(text), "%s/%s", ns && *ns ? ns : "*", name);
    } else if (selector) {
        struct ck_label_selector *ls = NULL;
        char *s = ck_label_selector_from_object(selector, &ls, NULL) == 0
                      ? ck_label_selector_string(ls)
                      : NULL;
        if (s)
            snprintf(text, sizeof(text), "%s", s);
        free(s);
        ck_label_selector_free(ls);
    }
    cells[2] = json_string(text);
}

static const char *const categories[] = {"api-extensions", NULL};

const struct ck_kind ck__kind_validatingadmissionpolicybinding = {
    .group = "admissionregistration.k8s.io",
    .version = "v1",
    .kind = "ValidatingAdmissionPolicyBinding",
    .list_kind = "ValidatingAdmissionPolicyBindingList",
    .resource = "validatingadmissionpolicybindings",
    .singular = "validatingadmissionpolicybinding",
    .categories = categories,
    .namespaced = false,
    .has_generation = true,
    .configures_admission = true,
    .admission_lists_all = true,
    .role = CK_KIND_ROLE_VALIDATING_ADMISSION_POLICY_BINDING,
    .schema = "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
    .columns = columns,
    .n_columns = CK__COUNT(columns),
    .cells = cells,
    .validate = ck__validate_validating_admission_policy_binding,
};
