/*
 * eventv1.c - the Event kind in events.k8s.io/v1: the same objects as core/v1
 * Event (one collection, /registry/events), seen through the newer API, as
 * kube-apiserver serves both from one storage.
 *
 * Stored in core/v1: an object written here is converted before it is stored
 * and converted back when read (pkg/apis/events/v1/conversion.go): regarding is
 * involvedObject, note is message, deprecatedSource, deprecatedFirstTimestamp,
 * deprecatedLastTimestamp and deprecatedCount are source, firstTimestamp,
 * lastTimestamp and count, and reportingController is core's
 * reportingComponent; the other members share their names. Validation is
 * pkg/apis/core/validation/events.go run on the core form, as Kubernetes runs
 * it on the internal version: the legacy rules every event passes
 * (ck__event_validate_legacy, event.c), and the strict ones of a write
 * through events.k8s.io (eventTime, reportingController, reportingInstance,
 * action and reason required, the deprecated fields unset on create, a
 * series of at least 2, most fields immutable), so error paths name the core
 * fields as Kubernetes' do. The printer is core's, on the core form.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_events.c and tests/e2e/test_events_flowcontrol.sh.
 */
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

/* The members whose names differ, as {events.k8s.io/v1, core/v1}. */
static const char *const renames[][2] = {
    {"regarding", "involvedObject"},
    {"note", "message"},
    {"deprecatedSource", "source"},
    {"deprecatedFirstTimestamp", "firstTimestamp"},
    {"deprecatedLastTimestamp", "lastTimestamp"},
    {"deprecatedCount", "count"},
    {"reportingController", "reportingComponent"},
};

/* Moves each member named renames[i][from] to renames[i][!from]; 0 or CK_ENOMEM. */
static int rename_members(json_t *obj, const char *api_version, int from)
{
    if (!json_is_object(obj))
        return 0;
    int failed = json_object_set_new(obj, "apiVersion", json_string(api_version));
    for (size_t i = 0; i < CK__COUNT(renames); i++) {
        json_t *v = json_object_get(obj, renames[i][from]);
        if (!v)
            continue;
        json_incref(v);
        json_object_del(obj, renames[i][from]);
        failed |= json_object_set_new(obj, renames[i][!from], v);
    }
    return failed ? CK_ENOMEM : 0;
}

int ck__event_v1_to_core(json_t *obj)
{
    return rename_members(obj, "v1", 0);
}

int ck__event_core_to_v1(json_t *obj)
{
    /* empty in core, which always writes them; omitted when empty in events.k8s.io/v1 */
    static const char *const omit_empty[] = {"reportingController", "reportingInstance",
                                             "deprecatedCount"};
    int r = rename_members(obj, "events.k8s.io/v1", 1);
    for (size_t i = 0; r == 0 && i < CK__COUNT(omit_empty); i++) {
        const json_t *v = json_object_get(obj, omit_empty[i]);
        if ((json_is_string(v) && !*json_string_value(v)) ||
            (json_is_integer(v) && json_integer_value(v) == 0))
            json_object_del(obj, omit_empty[i]);
    }
    return r;
}

static bool is_set(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return v && !json_is_null(v) && !(json_is_string(v) && !*json_string_value(v)) &&
           !(json_is_integer(v) && json_integer_value(v) == 0);
}

static void validate_series(const json_t *c, struct ck_field_errors *errs)
{
    const json_t *series = json_object_get(c, "series");
    if (!json_is_object(series))
        return;
    if (ck__int_at(series, "count") < 2)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "series.count", "", true,
                            "should be at least 2");
    if (!is_set(series, "lastObservedTime"))
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "series.lastObservedTime", NULL, false, NULL);
}

static void validate_create(const json_t *c, struct ck_field_errors *errs)
{
    static const char *const unset[] = {"firstTimestamp", "lastTimestamp", "count"};
    validate_series(c, errs);
    if (!is_set(c, "eventTime"))
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "eventTime", NULL, false, NULL);
    const char *type = ck__str_at(c, "type");
    if (!type || (strcmp(type, "Normal") != 0 && strcmp(type, "Warning") != 0))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "type", "", true, "has invalid value: %s",
                            type ? type : "");
    for (size_t i = 0; i < CK__COUNT(unset); i++)
        if (is_set(c, unset[i]))
            ck_field_errors_add(errs, CK_FIELD_INVALID, unset[i], "", true, "needs to be unset");
    const char *component = ck__str_at(c, "source.component");
    const char *host = ck__str_at(c, "source.host");
    if ((component && *component) || (host && *host))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "source", "", true, "needs to be unset");
}

static void validate_update(const json_t *c, const json_t *old, struct ck_field_errors *errs)
{
    /* ValidateEventUpdate's list, reason twice as there */
    static const char *const frozen[] = {
        "involvedObject",
        "reason",
        "message",
        "source",
        "firstTimestamp",
        "lastTimestamp",
        "count",
        "reason",
        "type",
        "eventTime",
        "action",
        "related",
        "reportingComponent",
        "reportingInstance",
    };
    const json_t *series = json_object_get(c, "series");
    const json_t *was_series = json_object_get(old, "series");
    if (!json_equal(series ? series : json_null(), was_series ? was_series : json_null()))
        validate_series(c, errs);
    for (size_t i = 0; i < CK__COUNT(frozen); i++) {
        const json_t *now = json_object_get(c, frozen[i]);
        const json_t *was = json_object_get(old, frozen[i]);
        if (json_equal(now ? now : json_null(), was ? was : json_null()))
            continue;
        const char *field =
            strcmp(frozen[i], "reportingComponent") == 0 ? "reportingController" : frozen[i];
        char *text = json_is_string(now)
                         ? NULL
                         : (now ? json_dumps(now, JSON_COMPACT | JSON_ENCODE_ANY) : NULL);
        ck_field_errors_add(errs, CK_FIELD_INVALID, field,
                            json_is_string(now) ? json_string_value(now) : (text ? text : "null"),
                            json_is_string(now), "field is immutable");
        free(text);
    }
}

/* The rules of a write through events.k8s.io/v1, on the core form (c, and was on update). */
static void validate_core(const json_t *c, const json_t *was, struct ck_field_errors *errs)
{
    ck__event_validate_legacy(c, errs);
    if (was)
        validate_update(c, was, errs);
    else
        validate_create(c, errs);
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    ck__validate_converted(obj, old, ck__event_v1_to_core, validate_core, errs);
}

static void cells(const json_t *obj, long long now, json_t **row)
{
    ck__cells_converted(obj, now, ck__event_v1_to_core, ck__event_cells, row);
}

const struct ck_kind ck__kind_eventv1 = {
    CK__EVENT_KIND_COMMON,
    .group = "events.k8s.io",
    .schema = "io.k8s.api.events.v1.Event",
    .cells = cells,
    .validate = validate,
    .storage_resource = "events",
    .storage_api_version = "v1",
    .to_storage = ck__event_v1_to_core,
    .from_storage = ck__event_core_to_v1,
};
