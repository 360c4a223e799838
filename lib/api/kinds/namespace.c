/*
 * namespace.c - the Namespace kind (core/v1): the kind that holds the
 * namespace role, so the server finds it without naming it.
 *
 * Mirrors Kubernetes' pkg/registry/core/namespace: phase Active and the
 * `kubernetes` finalizer on create; the kubernetes.io/metadata.name label;
 * names are DNS-1123 labels; spec.finalizers change only through the
 * finalize subresource and hold the namespace while the namespace
 * controller empties it; a delete moves it to phase Terminating.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_strategy.c, test_printers.c and test_kinds.c, and
 * by tests/apiserver/test_delete.c (finalize and namespace deletion).
 */
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

static int prepare_for_create(json_t *obj)
{
    json_t *spec = ck__object_at(obj, "spec");
    json_t *finalizers = json_object_get(spec, "finalizers");
    if (!json_is_array(finalizers)) {
        finalizers = json_array();
        if (json_object_set_new(spec, "finalizers", finalizers) < 0)
            return CK_ENOMEM;
    }
    bool has = false;
    size_t i;
    json_t *f;
    json_array_foreach(finalizers, i, f)
    {
        has = has || (json_is_string(f) && strcmp(json_string_value(f), "kubernetes") == 0);
    }
    if ((!has && json_array_append_new(finalizers, json_string("kubernetes")) < 0) ||
        json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Active")) < 0)
        return CK_ENOMEM;
    return 0;
}

/*
 * Sets obj's spec.finalizers to a copy of from's, or removes them when from has none.
 * 0 or CK_ENOMEM.
 */
static int copy_finalizers(json_t *obj, const json_t *from)
{
    json_t *spec = ck__object_at(obj, "spec");
    json_t *finalizers = json_object_get(json_object_get(from, "spec"), "finalizers");
    if (finalizers)
        return json_object_set_new(spec, "finalizers", ck__json_copy(finalizers)) < 0 ? CK_ENOMEM
                                                                                      : 0;
    json_object_del(spec, "finalizers");
    return spec ? 0 : CK_ENOMEM;
}

static int prepare_for_update(json_t *obj, const json_t *old)
{
    /* spec.finalizers change only through the finalize subresource */
    return copy_finalizers(obj, old);
}

static int defaults(json_t *obj)
{
    json_t *meta = ck__object_at(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!meta ||
        (name && json_object_set_new(ck__object_at(meta, "labels"), "kubernetes.io/metadata.name",
                                     json_string(name)) < 0))
        return CK_ENOMEM;
    return 0;
}

static bool has_own_finalizers(const json_t *obj)
{
    return json_array_size(json_object_get(json_object_get(obj, "spec"), "finalizers")) > 0;
}

static int prepare_for_delete(json_t *obj)
{
    return json_object_set_new(ck__object_at(obj, "status"), "phase", json_string("Terminating")) <
                   0
               ? CK_ENOMEM
               : 0;
}

/* The finalize subresource: only spec.finalizers is taken from the body. */
static json_t *finalize_update(const char *name, const json_t *body, const json_t *old,
                               struct ck_field_errors *errs, struct ck_err *reterr)
{
    (void)name;
    (void)errs;
    json_t *next = ck__json_copy(old);
    if (!next) {
        ck_err_set(reterr, CK_ENOMEM, "out of memory");
        return NULL;
    }
    if (copy_finalizers(next, body) < 0) {
        json_decref(next);
        ck_err_set(reterr, CK_ENOMEM, "out of memory");
        return NULL;
    }
    return next;
}

static const char *const short_names[] = {"ns", NULL};
static const char *const update_only[] = {"update", NULL};

static const struct ck_subresource subresources[] = {
    CK__STATUS_SUBRESOURCE,
    {.name = "finalize",
     .part = CK_SUBRESOURCE_CUSTOM,
     .verbs = update_only,
     .update = finalize_update},
};

static const struct ck_field_label field_labels[] = {
    {"status.phase", "status.phase", CK_FIELD_LABEL_STRING},
};

static const struct ck_table_column columns[] = {
    CK__NAME_COLUMN(0),
    {"Status", "string", "", "The status of the namespace", 0, ".status.phase",
     CK_CELL_ABSENT_EMPTY, false},
    CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_namespace = {
    .group = "",
    .version = "v1",
    .kind = "Namespace",
    .list_kind = "NamespaceList",
    .resource = "namespaces",
    .singular = "namespace",
    .short_names = short_names,
    .namespaced = false,
    .role = CK_KIND_ROLE_NAMESPACE,
    .name_rule = CK_NAME_DNS_LABEL,
    .schema = "io.k8s.api.core.v1.Namespace",
    CK__KIND_SUBRESOURCES(subresources),
    CK__KIND_FIELD_LABELS(field_labels),
    CK__KIND_COLUMNS(columns),
    .prepare_for_create = prepare_for_create,
    .prepare_for_update = prepare_for_update,
    .defaults = defaults,
    .has_own_finalizers = has_own_finalizers,
    .prepare_for_delete = prepare_for_delete,
};
