/*
 * prioritylevelconfiguration.c - the PriorityLevelConfiguration kind
 * (flowcontrol.apiserver.k8s.io/v1): a priority level of API Priority and
 * Fairness, exempt or limited (its share of the server's concurrency, what
 * happens to a request over the limit: rejected or queued).
 *
 * Mirrors Kubernetes' pkg/registry/flowcontrol/prioritylevelconfiguration/
 * strategy.go, pkg/apis/flowcontrol/v1/defaults.go and pkg/apis/flowcontrol/
 * validation: cluster-scoped, generation kept, a status subresource; a limited
 * level's nominalConcurrencyShares defaults to 30 (0 allowed in v1),
 * lendablePercent to 0, a queue's queues, handSize and queueLengthLimit to 64,
 * 8 and 50; an exempt level's shares and lendable percent to 0. Only the level
 * named exempt is of type Exempt; the mandatory exempt and catch-all levels
 * keep their fixed spec (the exempt level's shares and lendable percent
 * excepted). The printer shows NAME, TYPE, NOMINALCONCURRENCYSHARES, QUEUES,
 * HANDSIZE, QUEUELENGTHLIMIT and AGE as kube-apiserver's table does.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_flowcontrol.c and tests/e2e/test_events_flowcontrol.sh.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

#define DEFAULT_SHARES             30
#define DEFAULT_HAND_SIZE          8
#define DEFAULT_QUEUES             64
#define DEFAULT_QUEUE_LENGTH_LIMIT 50
#define MAX_QUEUES                 10000000
#define MAX_HASH_BITS              60 /* shufflesharding.MaxHashBits */

/* Sets parent[key] to value when absent (or, with zero_too, 0). */
static int default_int(json_t *parent, const char *key, long long value, bool zero_too)
{
    const json_t *v = json_object_get(parent, key);
    if (v && !json_is_null(v) && !(zero_too && json_integer_value(v) == 0))
        return 0;
    return json_object_set_new(parent, key, json_integer(value)) < 0 ? CK_ENOMEM : 0;
}

static int defaults(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    json_t *limited = json_object_get(spec, "limited");
    json_t *exempt = json_object_get(spec, "exempt");
    int r = 0;
    if (json_is_object(limited)) {
        r |= default_int(limited, "nominalConcurrencyShares", DEFAULT_SHARES, false);
        r |= default_int(limited, "lendablePercent", 0, false);
        json_t *queuing = json_object_get(json_object_get(limited, "limitResponse"), "queuing");
        if (json_is_object(queuing)) {
            r |= default_int(queuing, "handSize", DEFAULT_HAND_SIZE, true);
            r |= default_int(queuing, "queues", DEFAULT_QUEUES, true);
            r |= default_int(queuing, "queueLengthLimit", DEFAULT_QUEUE_LENGTH_LIMIT, true);
        }
    }
    if (json_is_object(exempt)) {
        r |= default_int(exempt, "nominalConcurrencyShares", 0, false);
        r |= default_int(exempt, "lendablePercent", 0, false);
    }
    return r ? CK_ENOMEM : 0;
}

static bool present(const json_t *parent, const char *key)
{
    const json_t *v = json_object_get(parent, key);
    return v && !json_is_null(v);
}

/* Adds `path: Invalid value: N: detail` for parent[key]. */
static void invalid_int(const json_t *parent, const char *key, const char *at, const char *detail,
                        struct ck_field_errors *errs)
{
    char path[128], value[32];
    snprintf(path, sizeof(path), "%s.%s", at, key);
    snprintf(value, sizeof(value), "%lld", ck__int_at(parent, key));
    ck_field_errors_add(errs, CK_FIELD_INVALID, path, value, false, "%s", detail);
}

static void check_lendable(const json_t *parent, const char *at, struct ck_field_errors *errs)
{
    long long lendable = ck__int_at(parent, "lendablePercent");
    if (present(parent, "lendablePercent") && (lendable < 0 || lendable > 100))
        invalid_int(parent, "lendablePercent", at, "must be between 0 and 100, inclusive", errs);
}

/*
 * shufflesharding.RequiredEntropyBits(queues, hand) > MAX_HASH_BITS, that is
 * ceil(log2(queues) * hand) > 60, which holds exactly when queues^hand > 2^60.
 */
static bool too_much_entropy(long long queues, long long hand)
{
    const unsigned long long limit = 1ULL << MAX_HASH_BITS;
    unsigned long long acc = 1;
    for (long long i = 0; i < hand; i++) {
        if (acc > limit / (unsigned long long)queues)
            return true; /* the next product passes the limit */
        acc *= (unsigned long long)queues;
    }
    return acc > limit;
}

static void validate_queuing(const json_t *q, struct ck_field_errors *errs)
{
    static const char at[] = "spec.limited.limitResponse.queuing";
    char detail[160];
    long long queues = ck__int_at(q, "queues"), hand = ck__int_at(q, "handSize");
    if (ck__int_at(q, "queueLengthLimit") <= 0)
        invalid_int(q, "queueLengthLimit", at, "must be positive", errs);
    if (queues <= 0)
        invalid_int(q, "queues", at, "must be positive", errs);
    else if (queues > MAX_QUEUES) {
        snprintf(detail, sizeof(detail), "must not be greater than %d", MAX_QUEUES);
        invalid_int(q, "queues", at, detail, errs);
    }
    if (hand <= 0) {
        invalid_int(q, "handSize", at, "must be positive", errs);
    } else if (hand > queues) {
        snprintf(detail, sizeof(detail), "should not be greater than queues (%lld)", queues);
        invalid_int(q, "handSize", at, detail, errs);
    } else if (too_much_entropy(queues, hand)) {
        snprintf(detail, sizeof(detail),
                 "required entropy bits of deckSize %lld and handSize %lld should not be greater "
                 "than %d",
                 queues, hand, MAX_HASH_BITS);
        invalid_int(q, "handSize", at, detail, errs);
    }
}

static void validate_limited(const json_t *limited, struct ck_field_errors *errs)
{
    static const char at[] = "spec.limited";
    if (ck__int_at(limited, "nominalConcurrencyShares") < 0)
        invalid_int(limited, "nominalConcurrencyShares", at, "must be a non-negative integer",
                    errs);
    const json_t *response = json_object_get(limited, "limitResponse");
    const char *type = ck__str_at(response, "type");
    const json_t *queuing = json_object_get(response, "queuing");
    if (type && strcmp(type, "Reject") == 0) {
        if (present(response, "queuing"))
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.limited.limitResponse.queuing",
                                NULL, false,
                                "must be nil if limited.limitResponse.type is not Limited");
    } else if (type && strcmp(type, "Queue") == 0) {
        if (!json_is_object(queuing))
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.limited.limitResponse.queuing", NULL,
                                false,
                                "must not be empty if limited.limitResponse.type is Limited");
        else
            validate_queuing(queuing, errs);
    } else {
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.limited.limitResponse.type",
                            type ? type : "", true, "supported values: \"Queue\", \"Reject\"");
    }
    check_lendable(limited, at, errs);
    if (present(limited, "borrowingLimitPercent") &&
        ck__int_at(limited, "borrowingLimitPercent") < 0)
        invalid_int(limited, "borrowingLimitPercent", at,
                    "if specified, must be a non-negative integer", errs);
}

static void validate_exempt(const json_t *exempt, struct ck_field_errors *errs)
{
    if (ck__int_at(exempt, "nominalConcurrencyShares") < 0)
        invalid_int(exempt, "nominalConcurrencyShares", "spec.exempt",
                    "must be a non-negative integer", errs);
    check_lendable(exempt, "spec.exempt", errs);
}

/* The exempt level's fixed spec, with the shares and lendable percent obj gives. */
static void validate_mandatory(const json_t *obj, struct ck_field_errors *errs)
{
    const char *name = ck__str_at(obj, "metadata.name");
    const json_t *mandatory = ck__apf_mandatory("priorityLevelConfigurations", name);
    const json_t *exempt = ck__json_path(obj, "spec.exempt");
    if (!mandatory || strcmp(name, "exempt") != 0 || !json_is_object(exempt)) {
        ck__apf_validate_mandatory(obj, "priorityLevelConfigurations", NULL, errs);
        return;
    }
    json_t *fixed = ck__json_copy(json_object_get(mandatory, "spec"));
    json_t *copy = ck__json_copy(exempt);
    if (!fixed || !copy || json_object_set_new(fixed, "exempt", copy) < 0) {
        errs->nomem = true;
        json_decref(fixed);
        return;
    }
    ck__apf_validate_mandatory(obj, "priorityLevelConfigurations", fixed, errs);
    json_decref(fixed);
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old; /* an update is validated as a create */
    const char *name = ck__str_at(obj, "metadata.name");
    const json_t *spec = json_object_get(obj, "spec");
    const char *type = ck__str_at(spec, "type");
    bool named_exempt = name && strcmp(name, "exempt") == 0;
    bool exempt_type = type && strcmp(type, "Exempt") == 0;
    if (named_exempt != exempt_type)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.type", type ? type : "", true,
                            "type must be 'Exempt' if and only if name is 'exempt'");
    if (exempt_type) {
        if (present(spec, "limited"))
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.limited", NULL, false,
                                "must be nil if the type is not Limited");
        if (present(spec, "exempt"))
            validate_exempt(json_object_get(spec, "exempt"), errs);
    } else if (type && strcmp(type, "Limited") == 0) {
        if (present(spec, "exempt"))
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.exempt", NULL, false,
                                "must be nil if the type is Limited");
        if (!json_is_object(json_object_get(spec, "limited")))
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.limited", NULL, false,
                                "must not be empty when type is Limited");
        else
            validate_limited(json_object_get(spec, "limited"), errs);
    } else {
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.type", type ? type : "", true,
                            "supported values: \"Exempt\", \"Limited\"");
    }
    validate_mandatory(obj, errs);
    ck__apf_validate_conditions(obj, errs);
}

enum {
    COL_NAME,
    COL_TYPE,
    COL_SHARES,
    COL_QUEUES,
    COL_HAND_SIZE,
    COL_QUEUE_LENGTH_LIMIT,
    COL_AGE,
};

/* limited's integer at path, or "<none>" as Kubernetes prints a level without it. */
static json_t *int_or_none(const json_t *limited, const char *path)
{
    const json_t *v = ck__json_path(limited, path);
    return limited && json_is_integer(v) ? json_integer(json_integer_value(v))
                                         : json_string("<none>");
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const json_t *limited = ck__json_path(obj, "spec.limited");
    if (!json_is_object(limited))
        limited = NULL;
    const json_t *queuing = ck__json_path(limited, "limitResponse.queuing");
    if (!json_is_object(queuing))
        queuing = NULL;
    cells[COL_SHARES] = int_or_none(limited, "nominalConcurrencyShares");
    cells[COL_QUEUES] = int_or_none(queuing, "queues");
    cells[COL_HAND_SIZE] = int_or_none(queuing, "handSize");
    cells[COL_QUEUE_LENGTH_LIMIT] = int_or_none(queuing, "queueLengthLimit");
}

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_TYPE] = {"Type", "string", "", "Exempt or Limited.", 0, ".spec.type", CK_CELL_ABSENT_EMPTY,
                  false},
    [COL_SHARES] = CK__COMPUTED_COLUMN("NominalConcurrencyShares", "string",
                                       "The level's share of the server's concurrency.", 0),
    [COL_QUEUES] = CK__COMPUTED_COLUMN("Queues", "string", "The number of queues.", 0),
    [COL_HAND_SIZE] = CK__COMPUTED_COLUMN("HandSize", "string",
                                          "The number of queues a flow is shuffle-sharded to.", 0),
    [COL_QUEUE_LENGTH_LIMIT] =
        CK__COMPUTED_COLUMN("QueueLengthLimit", "string", "The most requests one queue holds.", 0),
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_prioritylevelconfiguration = {
    CK__APF_KIND_COMMON,
    .kind = "PriorityLevelConfiguration",
    .list_kind = "PriorityLevelConfigurationList",
    .resource = "prioritylevelconfigurations",
    .singular = "prioritylevelconfiguration",
    .schema = "io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration",
    .columns = columns,
    .n_columns = CK__COUNT(columns),
    .cells = cells,
    .defaults = defaults,
    .validate = validate,
};
