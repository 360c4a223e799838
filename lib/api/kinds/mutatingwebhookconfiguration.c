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

const struct ck_kind ck__kind_mutatingwebhookconfiguration = {
    .group = "admissionregistration.k8s.io",
    .version = "v1",
    .kind = "MutatingWebhookConfiguration",
    .list_kind = "MutatingWebhookConfigurationList",
    .resource = "mutatingwebhookconfigurations",
    .singular = "mutatingwebhookconfiguration",
    .namespaced = false,
    .has_generation = true,
    .configures_admission = true,
    .admission_lists_all = true,
    .schema = "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
    CK__KIND_COLUMNS(ck__webhook_columns),
    .cells = ck__cells_webhooks,
    .validate = ck__validate_mutating_webhooks,
};
