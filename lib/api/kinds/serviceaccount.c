/*
 * serviceaccount.c - the ServiceAccount kind (core/v1): an identity for
 * processes in pods. Its tokens are JWTs libckube-auth signs and verifies
 * (ck_auth_jwt_sign(), through the serviceaccounts/token subresource,
 * TokenRequest, which the API server's authentication code answers); the object itself holds only
 * legacy secret references, image pull secrets and automountServiceAccountToken.
 *
 * Mirrors Kubernetes' pkg/registry/core/serviceaccount: names are DNS-1123
 * subdomains, short name sa, and kubectl prints NAME, SECRETS (how many
 * secrets it lists) and AGE.
 *
 * Tests: tests/auth/test_kinds.c, tests/api/test_kinds.c.
 * Threading: the descriptor is static and immutable; the hooks are pure.
 */
#include "../internal.h"

enum { COL_NAME, COL_SECRETS, COL_AGE };

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    cells[COL_SECRETS] = json_integer((json_int_t)json_array_size(json_object_get(obj, "secrets")));
}

static const char *const short_names[] = {"sa", NULL};
static const char *const create_only[] = {"create", NULL};

/*
 * serviceaccounts/token (TokenRequest): the API server's authentication code
 * answers it (it needs the signing key); a server without one answers 503.
 */
static const struct ck_subresource subresources[] = {
    {.name = "token",
     .part = CK_SUBRESOURCE_UNSERVED,
     .verbs = create_only,
     .group = "authentication.k8s.io",
     .version = "v1",
     .kind = "TokenRequest",
     .schema = "io.k8s.api.authentication.v1.TokenRequest",
     .message =
         "serviceaccounts/token needs a service-account signing key: the server runs without TLS and authentication"},
};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_SECRETS] =
        CK__COMPUTED_COLUMN("Secrets", "string", "How many secrets the account lists.", 0),
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_serviceaccount = {
    .group = "",
    .version = "v1",
    .kind = "ServiceAccount",
    .list_kind = "ServiceAccountList",
    .resource = "serviceaccounts",
    .singular = "serviceaccount",
    .short_names = short_names,
    .namespaced = true,
    .role = CK_KIND_ROLE_SERVICE_ACCOUNT,
    .schema = "io.k8s.api.core.v1.ServiceAccount",
    CK__KIND_SUBRESOURCES(subresources),
    CK__KIND_COLUMNS(columns),
    .cells = cells,
};
