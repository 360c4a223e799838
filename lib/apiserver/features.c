/*
 * features.c - the API server's feature gate: ckube's own features
 * (generated from features/ckube-features.yaml) at an emulated version inside
 * Kubernetes' compatibility window, logging through ckube's logger.
 *
 * The API's gated fields ask the gate through ck__feature_enabled().
 *
 * Threading: building the gate is single-threaded start-up work; the server
 * then only reads it with ck_fg_enabled(), which is lock-free.
 *
 * No test of its own: tests/apiserver/test_gates.c (gated fields with the
 * gate on, off and absent: ck__feature_enabled), test_watch_gate.c
 * (ck_apiserver_feature_gate_new, WatchList both ways) and every server
 * test's start-up (ck__check_api_features) run it; so does
 * tests/e2e/test_kubectl_gates.sh through `ckube server --feature-gates`.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ckube/apiserver.h"
#include "ckube_features.h"
#include "internal.h"

static void log_feature_gate(void *userdata, int verbosity, const char *msg)
{
    (void)userdata;
    CK_LOGV(verbosity, "%s", msg);
}

/* The Kubernetes version this binary serves, from /version's major and minor. */
static struct ck_fg_version binary_version(void)
{
    const struct ck_version_info *v = ck_version();
    return ck_fg_version_mm((uint32_t)strtoul(v->major, NULL, 10),
                            (uint32_t)strtoul(v->minor, NULL, 10));
}

int ck_apiserver_feature_gate_new(const struct ck_fg_version *emulated, struct ck_fg_gate **ret,
                                  struct ck_err *reterr)
{
    struct ck_fg_version binary = binary_version();
    struct ck_fg_version want = emulated ? *emulated : binary, min_compat;
    struct ck_fg_err fgerr = {0};
    if (ck_fg_window_check(binary, want, NULL, &min_compat, &fgerr) < 0)
        return ck_err_set(reterr, CK_EINVAL, "%s", fgerr.msg);
    struct ck_fg_gate *g = ck_fg_gate_new(want);
    if (!g)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    ck_fg_set_logger(g, log_feature_gate, NULL);
    if (ck_fg_set_versions(g, want, min_compat, &fgerr) < 0 ||
        ck_features_register(g, &fgerr) < 0) {
        ck_fg_gate_free(g);
        return ck_err_set(reterr, fgerr.code == CK_FG_ENOMEM ? CK_ENOMEM : CK_EINVAL, "%s",
                          fgerr.msg);
    }
    *ret = g;
    return 0;
}

bool ck__watch_list_enabled(const struct ck_apiserver *server)
{
    return ck_fg_enabled(server->feature_gates, CK_FEATURE_WatchList);
}

bool ck__feature_enabled(void *ctx, const char *feature)
{
    const struct ck_apiserver *server = ctx;
    ck_fg_feature_t handle;
    /* every gated field's gate was checked at start-up; an unknown one is off */
    return ck_fg_lookup(server->feature_gates, feature, &handle) == 0 &&
           ck_fg_enabled(server->feature_gates, handle);
}

int ck__check_api_features(const struct ck_fg_gate *gates, struct ck_err *reterr)
{
    size_t n;
    const struct ck_api_feature *features = ck_api_features(&n);
    for (size_t i = 0; i < n; i++) {
        ck_fg_feature_t handle;
        if (ck_fg_lookup(gates, features[i].name, &handle) < 0)
            return ck_err_set(reterr, CK_EINVAL,
                              "the feature gate has no feature %s, which API fields use",
                              features[i].name);
    }
    return 0;
}
