/*
 * kinds.c - the registry of the kinds ckube serves, each described once.
 *
 * Discovery, field selectors, tables and (through the schema name) decoding
 * and OpenAPI all read these descriptions; adding a kind means adding one
 * entry here, its schema, and its row printer in printers.c. Facts come from
 * Kubernetes 1.32: resource names, short names, categories, subresources
 * and the field labels each kind's registry accepts in field selectors.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "internal.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- core/v1 ------------------------------------------------------------ */

static const char *const namespace_short[] = {"ns", NULL};
static const char *const namespace_sub[] = {"status", "finalize", NULL};
static const struct ck_field_label namespace_fields[] = {
    {"status.phase", "status.phase", CK_FIELD_LABEL_STRING},
};
static const struct ck_kind namespace_kind = {
    .group = "",
    .version = "v1",
    .kind = "Namespace",
    .list_kind = "NamespaceList",
    .resource = "namespaces",
    .singular = "namespace",
    .short_names = namespace_short,
    .namespaced = false,
    .schema = "io.k8s.api.core.v1.Namespace",
    .subresources = namespace_sub,
    .field_labels = namespace_fields,
    .n_field_labels = COUNT(namespace_fields),
    .columns = ck__namespace_columns,
    .n_columns = CK__NAMESPACE_COLUMNS,
    .row_cells = ck__namespace_row,
    .prepare_for_create = ck__namespace_prepare_for_create,
    .prepare_for_update = ck__namespace_prepare_for_update,
    .defaults = ck__namespace_defaults,
};

static const char *const pod_short[] = {"po", NULL};
static const char *const all_category[] = {"all", NULL};
static const char *const pod_sub[] = {"status", "log", "binding", NULL};
static const struct ck_field_label pod_fields[] = {
    {"spec.nodeName", "spec.nodeName", CK_FIELD_LABEL_STRING},
    {"spec.restartPolicy", "spec.restartPolicy", CK_FIELD_LABEL_STRING},
    {"spec.schedulerName", "spec.schedulerName", CK_FIELD_LABEL_STRING},
    {"spec.serviceAccountName", "spec.serviceAccountName", CK_FIELD_LABEL_STRING},
    {"spec.hostNetwork", "spec.hostNetwork", CK_FIELD_LABEL_BOOL},
    {"status.phase", "status.phase", CK_FIELD_LABEL_STRING},
    {"status.podIP", "status.podIP", CK_FIELD_LABEL_STRING},
    {"status.nominatedNodeName", "status.nominatedNodeName", CK_FIELD_LABEL_STRING},
};
static const struct ck_kind pod_kind = {
    .group = "",
    .version = "v1",
    .kind = "Pod",
    .list_kind = "PodList",
    .resource = "pods",
    .singular = "pod",
    .short_names = pod_short,
    .categories = all_category,
    .namespaced = true,
    .schema = "io.k8s.api.core.v1.Pod",
    .subresources = pod_sub,
    .field_labels = pod_fields,
    .n_field_labels = COUNT(pod_fields),
    .columns = ck__pod_columns,
    .n_columns = CK__POD_COLUMNS,
    .row_cells = ck__pod_row,
    .prepare_for_create = ck__pod_prepare_for_create,
    .defaults = ck__pod_defaults,
    .validate = ck__pod_validate,
};

static const char *const node_short[] = {"no", NULL};
static const char *const status_sub[] = {"status", NULL};
static const struct ck_field_label node_fields[] = {
    {"spec.unschedulable", "spec.unschedulable", CK_FIELD_LABEL_BOOL},
};
static const struct ck_kind node_kind = {
    .group = "",
    .version = "v1",
    .kind = "Node",
    .list_kind = "NodeList",
    .resource = "nodes",
    .singular = "node",
    .short_names = node_short,
    .namespaced = false,
    .schema = "io.k8s.api.core.v1.Node",
    .subresources = status_sub,
    .field_labels = node_fields,
    .n_field_labels = COUNT(node_fields),
    .columns = ck__node_columns,
    .n_columns = CK__NODE_COLUMNS,
    .row_cells = ck__node_row,
};

static const char *const event_short[] = {"ev", NULL};
static const struct ck_field_label event_fields[] = {
    {"involvedObject.kind", "involvedObject.kind", CK_FIELD_LABEL_STRING},
    {"involvedObject.namespace", "involvedObject.namespace", CK_FIELD_LABEL_STRING},
    {"involvedObject.name", "involvedObject.name", CK_FIELD_LABEL_STRING},
    {"involvedObject.uid", "involvedObject.uid", CK_FIELD_LABEL_STRING},
    {"involvedObject.apiVersion", "involvedObject.apiVersion", CK_FIELD_LABEL_STRING},
    {"involvedObject.resourceVersion", "involvedObject.resourceVersion", CK_FIELD_LABEL_STRING},
    {"involvedObject.fieldPath", "involvedObject.fieldPath", CK_FIELD_LABEL_STRING},
    {"reason", "reason", CK_FIELD_LABEL_STRING},
    {"reportingComponent", "reportingComponent", CK_FIELD_LABEL_STRING},
    {"source", "source.component", CK_FIELD_LABEL_STRING},
    {"type", "type", CK_FIELD_LABEL_STRING},
};
static const struct ck_kind event_kind = {
    .group = "",
    .version = "v1",
    .kind = "Event",
    .list_kind = "EventList",
    .resource = "events",
    .singular = "event",
    .short_names = event_short,
    .namespaced = true,
    .schema = "io.k8s.api.core.v1.Event",
    .field_labels = event_fields,
    .n_field_labels = COUNT(event_fields),
    .columns = ck__event_columns,
    .n_columns = CK__EVENT_COLUMNS,
    .row_cells = ck__event_row,
};

/* ---- apps/v1 ------------------------------------------------------------ */

static const char *const deployment_short[] = {"deploy", NULL};
static const char *const scalable_sub[] = {"status", "scale", NULL};
static const struct ck_kind deployment_kind = {
    .group = "apps",
    .version = "v1",
    .kind = "Deployment",
    .list_kind = "DeploymentList",
    .resource = "deployments",
    .singular = "deployment",
    .short_names = deployment_short,
    .categories = all_category,
    .namespaced = true,
    .has_generation = true,
    .schema = "io.k8s.api.apps.v1.Deployment",
    .subresources = scalable_sub,
    .columns = ck__deployment_columns,
    .n_columns = CK__DEPLOYMENT_COLUMNS,
    .row_cells = ck__deployment_row,
    .prepare_for_create = ck__deployment_prepare_for_create,
    .defaults = ck__deployment_defaults,
    .validate = ck__deployment_validate,
};

static const char *const replicaset_short[] = {"rs", NULL};
static const struct ck_field_label replicaset_fields[] = {
    {"status.replicas", "status.replicas", CK_FIELD_LABEL_INT},
};
static const struct ck_kind replicaset_kind = {
    .group = "apps",
    .version = "v1",
    .kind = "ReplicaSet",
    .list_kind = "ReplicaSetList",
    .resource = "replicasets",
    .singular = "replicaset",
    .short_names = replicaset_short,
    .categories = all_category,
    .namespaced = true,
    .has_generation = true,
    .schema = "io.k8s.api.apps.v1.ReplicaSet",
    .subresources = scalable_sub,
    .field_labels = replicaset_fields,
    .n_field_labels = COUNT(replicaset_fields),
    .columns = ck__replicaset_columns,
    .n_columns = CK__REPLICASET_COLUMNS,
    .row_cells = ck__replicaset_row,
    .prepare_for_create = ck__replicaset_prepare_for_create,
    .defaults = ck__workload_defaults,
    .validate = ck__workload_validate,
};

/* ---- example.ckube.io/v1 ------------------------------------------------ */

/* The example of feature-gated fields (lib/api/gates.c, docs/internals/apiserver.md). */
static const struct ck_kind frobber_kind = {
    .group = "example.ckube.io",
    .version = "v1",
    .kind = "Frobber",
    .list_kind = "FrobberList",
    .resource = "frobbers",
    .singular = "frobber",
    .namespaced = true,
    .has_generation = true,
    .schema = "io.ckube.example.v1.Frobber",
    .subresources = status_sub,
    .columns = ck__frobber_columns,
    .n_columns = CK__FROBBER_COLUMNS,
    .row_cells = ck__frobber_row,
};

static const struct ck_kind *const all_kinds[] = {
    &namespace_kind,  &pod_kind,        &node_kind,    &event_kind,
    &deployment_kind, &replicaset_kind, &frobber_kind,
};

const struct ck_kind *const *ck_kinds(size_t *ret_count)
{
    *ret_count = COUNT(all_kinds);
    return all_kinds;
}

const struct ck_kind *ck_kind_lookup(const char *group, const char *version, const char *resource)
{
    for (size_t i = 0; i < COUNT(all_kinds); i++) {
        const struct ck_kind *k = all_kinds[i];
        if (strcmp(k->group, group) == 0 && strcmp(k->version, version) == 0 &&
            strcmp(k->resource, resource) == 0)
            return k;
    }
    return NULL;
}

const char *ck_kind_api_version(const struct ck_kind *kind, char *buf, size_t size)
{
    if (kind->group[0])
        snprintf(buf, size, "%s/%s", kind->group, kind->version);
    else
        snprintf(buf, size, "%s", kind->version);
    return buf;
}

const char *ck_kind_qualified_resource(const struct ck_kind *kind, char *buf, size_t size)
{
    if (kind->group[0])
        snprintf(buf, size, "%s.%s", kind->resource, kind->group);
    else
        snprintf(buf, size, "%s", kind->resource);
    return buf;
}

/* The most field labels any kind has, plus metadata.name/namespace and NULL. */
#define MAX_LABELS 16

static const char *label_tables[COUNT(all_kinds)][MAX_LABELS];
static pthread_once_t label_tables_once = PTHREAD_ONCE_INIT;

static void fill_label_tables(void)
{
    for (size_t k = 0; k < COUNT(all_kinds); k++) {
        const char **names = label_tables[k];
        size_t n = 0;
        names[n++] = "metadata.name";
        names[n++] = "metadata.namespace";
        for (size_t i = 0; i < all_kinds[k]->n_field_labels && n + 1 < MAX_LABELS; i++)
            names[n++] = all_kinds[k]->field_labels[i].label;
        names[n] = NULL;
    }
}

const char *const *ck_kind_field_label_names(const struct ck_kind *kind)
{
    pthread_once(&label_tables_once, fill_label_tables);
    for (size_t k = 0; k < COUNT(all_kinds); k++)
        if (all_kinds[k] == kind)
            return label_tables[k];
    return NULL;
}

const char *ck_kind_field_value(const struct ck_kind *kind, const char *label, const json_t *obj,
                                char *buf, size_t size)
{
    if (strcmp(label, "metadata.name") == 0 || strcmp(label, "metadata.namespace") == 0)
        return json_string_value(ck__json_path(obj, label));
    for (size_t i = 0; i < kind->n_field_labels; i++) {
        const struct ck_field_label *f = &kind->field_labels[i];
        if (strcmp(f->label, label) != 0)
            continue;
        const json_t *v = ck__json_path(obj, f->path);
        switch (f->type) {
        case CK_FIELD_LABEL_STRING:
            return json_string_value(v);
        case CK_FIELD_LABEL_BOOL:
            return json_is_true(v) ? "true" : "false";
        case CK_FIELD_LABEL_INT:
            snprintf(buf, size, "%lld", (long long)json_integer_value(v));
            return buf;
        }
    }
    return NULL;
}

const char *ck_kind_field_getter(const char *label, const json_t *obj, const void *kind, char *buf,
                                 size_t size)
{
    return ck_kind_field_value(kind, label, obj, buf, size);
}
