/*
 * policy_status.c - the ValidatingAdmissionPolicy status controller kube-controller-manager
 * runs (Kubernetes 1.32 pkg/controller/validatingadmissionpolicystatus), here inside the
 * API server: a policy whose metadata.generation is above its status.observedGeneration
 * is type-checked (admission/typecheck.c) and its status written: observedGeneration the
 * generation checked, typeChecking.expressionWarnings the warnings (none: `{}`).
 *
 * One thread per server, woken by a store watch on the policies' prefix, lists the stored
 * policies and writes the status of those not yet observed. The write is an optimistic
 * status update that computes the warnings from the object it updates, so several servers
 * on one store write the same status and need no leader election.
 *
 * Threading: the thread (pass_thread.c) does all the work.
 *
 * Tested by tests/e2e/test_admission_policy.sh (kubectl reads status.typeChecking).
 */
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

struct ck__policy_status {
    struct ck__registry *registry;
    const struct ck_schemas *schemas;
    const struct ck_kind *kind;
    struct ck__pass_thread *loop; /* runs sync_all() on every change */
};

static json_int_t generation_of(const json_t *policy, bool observed)
{
    const json_t *at = json_object_get(policy, observed ? "status" : "metadata");
    return json_integer_value(json_object_get(at, observed ? "observedGeneration" : "generation"));
}

/* reconcile(): the status of the policy as it is now, type-checked at its generation. */
static json_t *typecheck_mutate(const json_t *current, void *arg, struct ck_err *reterr)
{
    const struct ck__policy_status *c = arg;
    json_t *warnings = NULL, *next = ck__json_copy(current);
    json_t *typechecking = json_object();
    json_t *status = json_object_get(next, "status");
    if (next && !json_is_object(status) && json_object_set_new(next, "status", json_object()) == 0)
        status = json_object_get(next, "status");
    int failed = !next || !typechecking || !json_is_object(status);
    if (!failed)
        json_object_del(json_object_get(next, "metadata"), "resourceVersion"); /* retry races */
    if (!failed && ck__policy_typecheck(current, c->schemas, &warnings) == 0) {
        if (json_array_size(warnings))
            failed |= json_object_set(typechecking, "expressionWarnings", warnings);
        failed |= json_object_set_new(status, "observedGeneration",
                                      json_integer(generation_of(current, false)));
        failed |= json_object_set(status, "typeChecking", typechecking);
    } else {
        failed = 1;
    }
    json_decref(warnings);
    json_decref(typechecking);
    if (failed) {
        json_decref(next);
        ck_err_no_memory(reterr);
        return NULL;
    }
    return next;
}

static bool sync_all(void *arg)
{
    struct ck__policy_status *c = arg;
    struct ck__list_options opts = {0};
    struct ck__list_result res = {0};
    struct ck_err err = {0};
    if (ck__registry_list(c->registry, c->kind, &opts, &res, &err) < 0) {
        CK_LOGW("validatingadmissionpolicies: cannot list: %s", ck_err_message(&err));
        ck_err_release(&err);
        return false; /* the next change tries again */
    }
    for (size_t i = 0; i < res.n_kvs; i++) {
        json_t *policy = ck__decode_stored(res.kvs[i]);
        const char *name =
            json_string_value(json_object_get(json_object_get(policy, "metadata"), "name"));
        if (name && generation_of(policy, false) > generation_of(policy, true)) {
            char *body = NULL;
            size_t len = 0;
            if (ck__registry_update(c->registry, c->kind, "", name, "status", typecheck_mutate, c,
                                    false, &body, &len, &err) < 0)
                CK_LOGW("validatingadmissionpolicy %s: status not written: %s", name,
                        ck_err_message(&err));
            free(body);
            ck_err_release(&err);
        }
        json_decref(policy);
    }
    ck__list_result_release(&res);
    return false;
}

int ck__policy_status_start(struct ck__registry *registry, const struct ck_schemas *schemas,
                            struct ck__policy_status **ret, struct ck_err *reterr)
{
    *ret = NULL;
    const struct ck_kind *kind = ck_kind_with_role(CK_KIND_ROLE_VALIDATING_ADMISSION_POLICY);
    if (!kind)
        return 0;
    struct ck__policy_status *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_no_memory(reterr);
    c->registry = registry;
    c->schemas = schemas;
    c->kind = kind;
    int r = ck__pass_thread_start(registry->store, kind, false, sync_all, c, &c->loop, reterr);
    if (r < 0) {
        ck__policy_status_stop(c);
        return r;
    }
    *ret = c;
    return 0;
}

struct ck__policy_status *ck__policy_status_stop(struct ck__policy_status *c)
{
    if (!c)
        return NULL;
    c->loop = ck__pass_thread_stop(c->loop);
    free(c);
    return NULL;
}
