/*
 * controllerrevision.c - the ControllerRevision kind (apps/v1): an immutable
 * snapshot of a DaemonSet's or StatefulSet's template, the history that
 * `kubectl rollout history|undo` reads.
 *
 * Mirrors Kubernetes' pkg/registry/apps/controllerrevision and
 * ValidateControllerRevision: no status, no generation; data is immutable
 * and revision is not negative. kubectl's columns: CONTROLLER is
 * <kind>.<group>/<name> of the controller reference, in lower case.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_kinds.c (descriptor) and tests/e2e/test_workloads.sh.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"

enum {
    COL_NAME,
    COL_CONTROLLER,
    COL_REVISION,
    COL_AGE,
};

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *revision = json_object_get(obj, "revision");
    char value[32];
    if (json_integer_value(revision) < 0) {
        snprintf(value, sizeof(value), "%lld", (long long)json_integer_value(revision));
        ck_field_errors_add(errs, CK_FIELD_INVALID, "revision", value, false,
                            "must be greater than or equal to 0");
    }
    if (old && !json_equal((json_t *)json_object_get(obj, "data"), json_object_get(old, "data")))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "data", NULL, false, "field is immutable");
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const json_t *refs = ck__json_path(obj, "metadata.ownerReferences");
    size_t i;
    const json_t *ref;
    json_array_foreach(refs, i, ref)
    {
        if (!json_is_true(json_object_get(ref, "controller")))
            continue;
        const char *api_version = json_string_value(json_object_get(ref, "apiVersion"));
        const char *kind = json_string_value(json_object_get(ref, "kind"));
        const char *name = json_string_value(json_object_get(ref, "name"));
        const char *slash = api_version ? strchr(api_version, '/') : NULL;
        char buf[512];
        if (slash) /* <kind>.<group>/<name>, the group being what precedes the version */
            snprintf(buf, sizeof(buf), "%s.%.*s/%s", kind ? kind : "", (int)(slash - api_version),
                     api_version, name ? name : "");
        else
            snprintf(buf, sizeof(buf), "%s/%s", kind ? kind : "", name ? name : "");
        for (char *p = buf; *p && *p != '/'; p++) /* formatResourceName lowers the kind */
            *p = (char)tolower((unsigned char)*p);
        cells[COL_CONTROLLER] = json_string(buf);
        return;
    }
    cells[COL_CONTROLLER] = json_string("<none>");
}

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_CONTROLLER] = CK__COMPUTED_COLUMN("Controller", "string", "Controller of the object", 0),
    [COL_REVISION] = {"Revision", "string", "",
                      "Revision indicates the revision of the state represented by Data.", 0,
                      ".revision", CK_CELL_ABSENT_ZERO, false},
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_controllerrevision = {
    .group = "apps",
    .version = "v1",
    .kind = "ControllerRevision",
    .list_kind = "ControllerRevisionList",
    .resource = "controllerrevisions",
    .singular = "controllerrevision",
    .namespaced = true,
    .schema = "io.k8s.api.apps.v1.ControllerRevision",
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .validate = validate,
};
