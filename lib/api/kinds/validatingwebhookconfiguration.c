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

const struct ck_kind ck__kind_validatingwebhookconfiguration = {
    .group = "admissionregistration.k8s.io",
    .version = "v1",
    .kind = "ValidatingWebhookConfiguration",
    .list_kind = "ValidatingWebhookConfigurationList",
    .resource = "validatingwebhookconfigurations",
    .singular = "validatingwebhookconfiguration",
    .namespaced = false,
    .has_generation = true,
    .configures_admission = true,
    .admission_lists_all = true,
    .schema = "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
    CK__KIND_COLUMNS(ck__webhook_columns),
    .cells = ck__cells_webhooks,
    .validate = ck__validate_validating_webhooks,
};
