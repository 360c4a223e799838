/*
 * selfsubjectrulesreview.c - the SelfSubjectRulesReview kind (authorization.k8s.io/v1): what the
 * requester may do in a namespace (kubectl auth can-i --list). It is never stored: a POST is
 * answered with the object and its status filled in, by the API server's authentication and
 * authorization code (lib/apiserver/authn_authz.c), and create is the only verb discovery lists.
 *
 * Mirrors Kubernetes' pkg/registry/authorization/selfsubjectrulesreview.
 *
 * Tests: tests/e2e/test_auth_tokens.sh.
 * Threading: the descriptor is static and immutable.
 */
#include "../internal.h"

static const char *const create_only[] = {"create", NULL};

static const struct ck_table_column columns[] = {CK__NAME_COLUMN(0), CK__AGE_COLUMN};

const struct ck_kind ck__kind_selfsubjectrulesreview = {
    .group = "authorization.k8s.io",
    .version = "v1",
    .kind = "SelfSubjectRulesReview",
    .resource = "selfsubjectrulesreviews",
    .singular = "selfsubjectrulesreview",
    .namespaced = false,
    .name_rule = CK_NAME_PATH_SEGMENT,
    .schema = "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
    .verbs = create_only,
    CK__KIND_COLUMNS(columns),
};
