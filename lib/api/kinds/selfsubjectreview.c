/*
 * selfsubjectreview.c - the SelfSubjectReview kind (authentication.k8s.io/v1): the user the server
 * takes the requester for (kubectl auth whoami). It is never stored: a POST is answered with the
 * object and its status filled in, by the API server's authentication and authorization code
 * (lib/apiserver/authn_authz.c), and create is the only verb discovery
 * lists.
 *
 * Mirrors Kubernetes' pkg/registry/authentication/selfsubjectreview.
 *
 * Tests: tests/e2e/test_auth_tokens.sh.
 * Threading: the descriptor is static and immutable.
 */
#include "../internal.h"

static const char *const create_only[] = {"create", NULL};

static const struct ck_table_column columns[] = {CK__NAME_COLUMN(0), CK__AGE_COLUMN};

const struct ck_kind ck__kind_selfsubjectreview = {
    .group = "authentication.k8s.io",
    .version = "v1",
    .kind = "SelfSubjectReview",
    .resource = "selfsubjectreviews",
    .singular = "selfsubjectreview",
    .namespaced = false,
    .name_rule = CK_NAME_PATH_SEGMENT,
    .schema = "io.k8s.api.authentication.v1.SelfSubjectReview",
    .verbs = create_only,
    CK__KIND_COLUMNS(columns),
};
