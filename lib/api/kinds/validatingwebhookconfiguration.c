/*
 * validatingwebhookconfiguration.c - the ValidatingWebhookConfiguration kind
 * (admissionregistration.k8s.io/v1): the validating admission webhooks the API server calls.
 *
 * Mirrors Kubernetes 1.32's pkg/registry/admissionregistration/validatingwebhookconfiguration:
 * cluster-scoped, no status, the generation counts changes of webhooks. Validation and
 * the printer are shared with the other webhook configuration (webhookconfiguration.c);
 * the ValidatingAdmissionWebhook admission plugin reads these objects.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_webhookconfiguration.c.
 */
#include "../internal.h"

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    ck__validate_webhook_configuration(obj, false, errs);
}

static const struct ck_table_column columns[] = {
    CK__NAME_COLUMN(0),
    CK__COMPUTED_COLUMN("Webhooks", "integer",
                        "Webhooks indicates the number of webhooks registered in this "
                        "configuration.",
                        0),
    CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_validatingwebhookconfiguration = {
    .group = "admissionregistration.k8s.io",
    .version = "v1",
    .kind = "ValidatingWebhookConfiguration",
    .list_kind = "ValidatingWebhookConfigurationList",
    .resource = "validatingwebhookconfigurations",
    .singular = "validatingwebhookconfiguration",
    .namespaced = false,
    .has_generation = true,
    .schema = "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
    .columns = columns,
    .n_columns = CK__COUNT(columns),
    .cells = ck__cells_webhooks,
    .validate = validate,
};
