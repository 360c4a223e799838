/*
 * event.c - the Event kind (core/v1): field labels for the involved object,
 * source and type (Kubernetes' pkg/registry/core/event), the printer's
 * computed cells (printEvent): LAST SEEN and FIRST SEEN from the
 * timestamps or the series, OBJECT as kind/name, SOURCE, the trimmed
 * MESSAGE and COUNT; and expiry: an event's last activity, from which the
 * server's --event-ttl counts (Kubernetes counts it from the last write,
 * through an etcd lease; see docs/differences.md).
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Validation is legacyValidateEvent (pkg/apis/core/validation/events.go), which
 * every event passes whichever API wrote it.
 *
 * The columns and cells are shared with the events.k8s.io/v1 form of the same
 * objects (eventv1.c), which prints them from this form, as Kubernetes prints
 * both from its internal version.
 *
 * Tested by tests/api/test_printers.c and test_kinds.c (the field labels
 * kubectl's event selectors use).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

enum {
    COL_LAST_SEEN,
    COL_TYPE,
    COL_REASON,
    COL_OBJECT,
    COL_SUBOBJECT,
    COL_SOURCE,
    COL_MESSAGE,
    COL_FIRST_SEEN,
    COL_COUNT,
    COL_NAME,
};

/* The message without leading and trailing blanks. */
static json_t *trimmed(const char *message)
{
    char *copy = strdup(message ? message : "");
    if (!copy)
        return NULL; /* out of memory: the Table fails */
    char *start = copy;
    while (*start == ' ' || *start == '\n' || *start == '\t')
        start++;
    size_t len = strlen(start);
    while (len > 0 && (start[len - 1] == ' ' || start[len - 1] == '\n' || start[len - 1] == '\t'))
        start[--len] = '\0';
    json_t *out = json_string(start);
    free(copy);
    return out;
}

void ck__event_cells(const json_t *obj, long long now, json_t **cells)
{
    char first[32], last[32], buf[512];
    const char *first_ts = ck__str_at(obj, "firstTimestamp");
    ck_age(first_ts ? first_ts : ck__str_at(obj, "eventTime"), now, first, sizeof(first));
    const char *last_ts = ck__str_at(obj, "lastTimestamp");
    if (last_ts)
        ck_age(last_ts, now, last, sizeof(last));
    else
        snprintf(last, sizeof(last), "%s", first);
    long long count = ck__int_at(obj, "count");
    if (ck__json_path(obj, "series")) {
        ck_age(ck__str_at(obj, "series.lastObservedTime"), now, last, sizeof(last));
        count = ck__int_at(obj, "series.count");
    } else if (count == 0) {
        count = 1;
    }
    cells[COL_LAST_SEEN] = json_string(last);

    const char *kind = ck__str_at(obj, "involvedObject.kind");
    const char *name = ck__str_at(obj, "involvedObject.name");
    char lower[128];
    snprintf(lower, sizeof(lower), "%s", kind ? kind : "");
    for (char *p = lower; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    if (name && *name)
        snprintf(buf, sizeof(buf), "%s/%s", lower, name);
    else
        snprintf(buf, sizeof(buf), "%s", lower);
    cells[COL_OBJECT] = json_string(buf);

    const char *component = ck__str_at(obj, "source.component");
    if (!component || !*component)
        component = ck__str_at(obj, "reportingComponent");
    const char *host = ck__str_at(obj, "source.host");
    if (host && *host)
        snprintf(buf, sizeof(buf), "%s, %s", component ? component : "", host);
    else
        snprintf(buf, sizeof(buf), "%s", component ? component : "");
    cells[COL_SOURCE] = json_string(buf);
    cells[COL_MESSAGE] = trimmed(ck__str_at(obj, "message"));
    cells[COL_FIRST_SEEN] = json_string(first);
    cells[COL_COUNT] = json_integer(count);
}

#define LENGTH_LIMIT      128  /* reportingInstance, action and reason */
#define NOTE_LENGTH_LIMIT 1024 /* message */

/* A required member of at most LENGTH_LIMIT bytes. */
static void required_short(const json_t *obj, const char *key, const char *field,
                           struct ck_field_errors *errs)
{
    const char *v = ck__str_at(obj, key);
    if (!v || !*v)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, NULL);
    else if (strlen(v) > LENGTH_LIMIT)
        ck_field_errors_add(errs, CK_FIELD_INVALID, field, "", true,
                            "can have at most %d characters", LENGTH_LIMIT);
}

void ck__event_validate_legacy(const json_t *obj, struct ck_field_errors *errs)
{
    const char *ns = ck__str_at(obj, "metadata.namespace");
    const char *involved = ck__str_at(obj, "involvedObject.namespace");
    const char *event_time = ck__str_at(obj, "eventTime");
    ns = ns ? ns : "";
    involved = involved ? involved : "";
    bool mismatch;
    if (!event_time || !*event_time) /* an old-style event: the namespaces agree */
        mismatch = *involved ? strcmp(ns, involved) != 0 : *ns && strcmp(ns, "default") != 0;
    else /* a new-style one may be about a cluster-scoped object from default or kube-system */
        mismatch = !*involved && strcmp(ns, "default") != 0 && strcmp(ns, "kube-system") != 0;
    if (mismatch)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "involvedObject.namespace", involved, true,
                            "does not match event.namespace");
    if (event_time && *event_time) {
        const char *controller = ck__str_at(obj, "reportingComponent");
        if (!controller || !*controller)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, "reportingController", NULL, false, NULL);
        ck_validate_qualified_name(controller ? controller : "", "reportingController", errs);
        required_short(obj, "reportingInstance", "reportingInstance", errs);
        required_short(obj, "action", "action", errs);
        required_short(obj, "reason", "reason", errs);
        const char *message = ck__str_at(obj, "message");
        if (message && strlen(message) > NOTE_LENGTH_LIMIT)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "message", "", true,
                                "can have at most %d characters", NOTE_LENGTH_LIMIT);
    }
    ck_validate_dns1123_subdomain(ns, "namespace", errs);
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old; /* a write through core/v1 passes the legacy rules only */
    ck__event_validate_legacy(obj, errs);
}

/*
 * The latest of the times an event says it was active: lastTimestamp,
 * series.lastObservedTime, eventTime, and its creation (set by the server,
 * so every stored event has one). Seconds since the epoch, 0 when none parses.
 */
static long long last_activity(const json_t *obj)
{
    static const char *const paths[] = {"lastTimestamp", "series.lastObservedTime", "eventTime",
                                        "metadata.creationTimestamp"};
    long long latest = 0;
    for (size_t i = 0; i < CK__COUNT(paths); i++) {
        int64_t t;
        if (ck__time_parse(ck__str_at(obj, paths[i]), &t, NULL) == 0 && t > latest)
            latest = t;
    }
    return latest;
}

const char *const ck__event_short_names[] = {"ev", NULL};

static const struct ck_field_label field_labels[] = {
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

const struct ck_table_column ck__event_columns[CK__EVENT_COLUMNS] = {
    [COL_LAST_SEEN] = CK__COMPUTED_COLUMN(
        "Last Seen", "string",
        "The time at which the most recent occurrence of this event was recorded.", 0),
    [COL_TYPE] = {"Type", "string", "", "Type of this event (Normal, Warning).", 0, ".type",
                  CK_CELL_ABSENT_EMPTY, false},
    [COL_REASON] = {"Reason", "string", "",
                    "Why the action was taken. Human-readable and machine-understandable.", 0,
                    ".reason", CK_CELL_ABSENT_EMPTY, false},
    [COL_OBJECT] =
        CK__COMPUTED_COLUMN("Object", "string", "The object that this event is about.", 0),
    [COL_SUBOBJECT] = {"Subobject", "string", "", "The field of the object this event is about.", 1,
                       ".involvedObject.fieldPath", CK_CELL_ABSENT_EMPTY, false},
    [COL_SOURCE] =
        CK__COMPUTED_COLUMN("Source", "string", "The component reporting this event.", 1),
    [COL_MESSAGE] = CK__COMPUTED_COLUMN(
        "Message", "string", "A human-readable description of the status of this operation.", 0),
    [COL_FIRST_SEEN] = CK__COMPUTED_COLUMN("First Seen", "string",
                                           "The time at which the event was first recorded.", 1),
    [COL_COUNT] =
        CK__COMPUTED_COLUMN("Count", "string", "The number of times this event has occurred.", 1),
    [COL_NAME] = CK__NAME_COLUMN(1),
};

const struct ck_kind ck__kind_event = {
    CK__EVENT_KIND_COMMON,
    .group = "",
    .schema = "io.k8s.api.core.v1.Event",
    CK__KIND_FIELD_LABELS(field_labels),
    .cells = ck__event_cells,
    .validate = validate,
    .last_activity = last_activity,
};
