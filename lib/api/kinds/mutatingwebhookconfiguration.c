/*
 * mutatingwebhookconfiguration.c - the MutatingWebhookConfiguration kind
 * (admissionregistration.k8s.io/v1): the mutating admission webhooks the API server calls.
 *
 * Mirrors Kubernetes 1.32's pkg/registry/admissionregistration/mutatingwebhookconfiguration:
 * cluster-scoped, no status, the generation counts changes of webhooks. Validation and
 * the printer are shared with the other webhook configuration (webhookconfiguration.c);
 * the MutatingAdmissionWebhook admission plugin reads these objects.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_webhookconfiguration.c.
 */
#include "../internal.h"

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    ck__validate_webhook_configuration(obj, true, errs);
}

static const struct ck_table_column columns[] = {
    CK__NAME_COLUMN(0),
    CK__COMPUTED_COLUMN("Webhooks", "integer",
                        "Webhooks indicates the number of webhooks registered in this "
                        "configuration.",
                        0),
    CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_mutatingwebhookconfiguration = {
    .group = "admissionregistration.k8s.io",
    .version = "v1",
    .kind = "MutatingWebhookConfiguration",
    .list_kind = "MutatingWebhookConfigurationList",
    .resource = "mutatingwebhookconfigurations",
    .singular = "mutatingwebhookconfiguration",
    .namespaced = false,
    .has_generation = true,
    .schema = "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
    .columns = columns,
    .n_columns = CK__COUNT(columns),
    .cells = ck__cells_webhooks,
    .validate = validate,
};
