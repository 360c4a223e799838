/*
 * test_flowcontrol.c - tests for lib/api/kinds/flowschema.c,
 * prioritylevelconfiguration.c and flowcontrol.c: the v1 defaults, validation
 * in Kubernetes' words, the fixed spec of the mandatory objects, the bootstrap
 * set (every object of it valid as it stands and unchanged by the defaults),
 * and the printers' cells.
 */
#include "cktest.h"

#include "kindtest.h"

#define GROUP "flowcontrol.apiserver.k8s.io"

static json_t *flow_schema(const char *name, const char *yaml_rules_verb)
{
    return json_pack("{s:{s:s}, s:{s:{s:s}, s:[{s:[{s:s, s:{s:s}}], s:[{s:[s], s:[s], s:[s], "
                     "s:b, s:[s]}]}]}}",
                     "metadata", "name", name, "spec", "priorityLevelConfiguration", "name",
                     "global-default", "rules", "subjects", "kind", "Group", "group", "name",
                     "system:authenticated", "resourceRules", "verbs", yaml_rules_verb, "apiGroups",
                     "*", "resources", "*", "clusterScope", 1, "namespaces", "*");
}

static json_t *limited_level(const char *name, int queues, int hand)
{
    return json_pack("{s:{s:s}, s:{s:s, s:{s:{s:s, s:{s:i, s:i}}}}}", "metadata", "name", name,
                     "spec", "type", "Limited", "limited", "limitResponse", "type", "Queue",
                     "queuing", "queues", queues, "handSize", hand);
}

static void test_flowschema_defaults_validation_and_cells(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind(GROUP, "flowschemas");
    assert_false(k->namespaced);
    json_t *o = flow_schema("mine", "get");
    kt_default(k, o);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(o, "spec"), "matchingPrecedence")),
        1000);
    kt_expect(k, o, NULL, NULL);
    kt_expect_cell(k, o, "PriorityLevel", "global-default");
    kt_expect_cell(k, o, "MatchingPrecedence", "1000");
    kt_expect_cell(k, o, "DistinguisherMethod", "<none>");
    kt_expect_cell(k, o, "MissingPL", "?");
    json_object_set_new(
        o, "status",
        json_pack("{s:[{s:s, s:s}]}", "conditions", "type", "Dangling", "status", "False"));
    kt_expect_cell(k, o, "MissingPL", "False");
    json_decref(o);

    o = flow_schema("mine", "fly");
    json_object_set_new(json_object_get(o, "spec"), "matchingPrecedence", json_integer(1));
    json_object_set_new(json_object_get(o, "spec"), "distinguisherMethod",
                        json_pack("{s:s}", "type", "ByColour"));
    kt_expect(k, o, NULL,
              "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have "
              "matchingPrecedence 1");
    kt_expect(k, o, NULL,
              "spec.rules[0].resourceRules[0].verbs: Unsupported value: []string{\"fly\"}: "
              "supported values: \"create\", \"delete\", \"deletecollection\", \"get\", \"list\", "
              "\"patch\", \"proxy\", \"update\", \"watch\"");
    kt_expect(k, o, NULL, "spec.distinguisherMethod.type: Unsupported value:");
    json_object_set_new(json_object_get(o, "spec"), "matchingPrecedence", json_integer(10001));
    kt_expect(k, o, NULL,
              "spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000");
    json_decref(o);

    o = json_pack("{s:{s:s}, s:{s:{s:s}, s:i, s:[{s:[{s:s}], s:[{s:[s, s], s:[s]}]}]}}", "metadata",
                  "name", "odd", "spec", "priorityLevelConfiguration", "name", "",
                  "matchingPrecedence", 50, "rules", "subjects", "kind", "User", "nonResourceRules",
                  "verbs", "*", "get", "nonResourceURLs", "healthz");
    kt_expect(k, o, NULL,
              "spec.priorityLevelConfiguration.name: Required value: must reference a priority "
              "level");
    kt_expect(k, o, NULL,
              "spec.rules[0].subjects[0].user: Required value: user is required when subject "
              "kind is 'User'");
    kt_expect(k, o, NULL,
              "spec.rules[0].nonResourceRules[0].verbs: Invalid value: []string{\"*\", \"get\"}: "
              "if '*' is present, must not specify other verbs");
    kt_expect(k, o, NULL,
              "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"healthz\": "
              "must start with slash");
    json_decref(o);
}

/* obj is valid, and the defaults change nothing in its spec (the set is written defaulted). */
static void expect_valid_as_defaulted(const struct ck_kind *k, const json_t *obj)
{
    json_t *defaulted = json_deep_copy(obj);
    kt_default(k, defaulted);
    if (!json_equal(json_object_get(defaulted, "spec"), json_object_get(obj, "spec"))) {
        char *text = json_dumps(defaulted, JSON_COMPACT);
        fail_msg("defaulted: %s", text);
        free(text);
    }
    kt_expect(k, obj, NULL, NULL);
    json_decref(defaulted);
}

static void test_mandatory_specs_are_fixed(void **state)
{
    (void)state;
    const struct ck_kind *fs = kt_kind(GROUP, "flowschemas");
    const struct ck_kind *pl = kt_kind(GROUP, "prioritylevelconfigurations");
    json_t *boot = ck_flowcontrol_bootstrap();
    assert_non_null(boot);
    json_t *catch_all = NULL, *exempt = NULL, *catch_all_level = NULL;
    static const char *const sets[] = {"mandatory", "suggested"};
    size_t n_fs = 0, n_pl = 0;
    for (size_t s = 0; s < 2; s++) {
        const json_t *set = json_object_get(boot, sets[s]);
        size_t i;
        json_t *obj;
        json_array_foreach(json_object_get(set, "flowSchemas"), i, obj)
        {
            expect_valid_as_defaulted(fs, obj);
            const char *name =
                json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
            if (strcmp(name, "catch-all") == 0)
                catch_all = json_deep_copy(obj);
            n_fs++;
        }
        json_array_foreach(json_object_get(set, "priorityLevelConfigurations"), i, obj)
        {
            expect_valid_as_defaulted(pl, obj);
            const char *name =
                json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
            if (strcmp(name, "exempt") == 0)
                exempt = json_deep_copy(obj);
            if (strcmp(name, "catch-all") == 0)
                catch_all_level = json_deep_copy(obj);
            n_pl++;
        }
    }
    assert_int_equal(n_fs, 13);
    assert_int_equal(n_pl, 8);
    json_decref(boot);

    json_object_set_new(json_object_get(catch_all, "spec"), "matchingPrecedence",
                        json_integer(9999));
    kt_expect(fs, catch_all, NULL, "spec of 'catch-all' must equal the fixed value");
    /* the exempt level's shares and lendable percent are the user's to tune */
    json_t *tuned = json_object_get(json_object_get(exempt, "spec"), "exempt");
    json_object_set_new(tuned, "nominalConcurrencyShares", json_integer(7));
    json_object_set_new(tuned, "lendablePercent", json_integer(10));
    kt_expect(pl, exempt, NULL, NULL);
    json_t *limited = json_object_get(json_object_get(catch_all_level, "spec"), "limited");
    json_object_set_new(limited, "nominalConcurrencyShares", json_integer(7));
    kt_expect(pl, catch_all_level, NULL, "spec of 'catch-all' must equal the fixed value");
    json_decref(catch_all);
    json_decref(exempt);
    json_decref(catch_all_level);
}

static void test_priority_level_defaults_validation_and_cells(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind(GROUP, "prioritylevelconfigurations");
    json_t *o =
        json_pack("{s:{s:s}, s:{s:s, s:{s:{s:s, s:{}}}}}", "metadata", "name", "mine", "spec",
                  "type", "Limited", "limited", "limitResponse", "type", "Queue", "queuing");
    kt_default(k, o);
    const json_t *limited = json_object_get(json_object_get(o, "spec"), "limited");
    const json_t *queuing = json_object_get(json_object_get(limited, "limitResponse"), "queuing");
    assert_int_equal(json_integer_value(json_object_get(limited, "nominalConcurrencyShares")), 30);
    assert_int_equal(json_integer_value(json_object_get(limited, "lendablePercent")), 0);
    assert_int_equal(json_integer_value(json_object_get(queuing, "queues")), 64);
    assert_int_equal(json_integer_value(json_object_get(queuing, "handSize")), 8);
    assert_int_equal(json_integer_value(json_object_get(queuing, "queueLengthLimit")), 50);
    kt_expect(k, o, NULL, NULL);
    kt_expect_cell(k, o, "Type", "Limited");
    kt_expect_cell(k, o, "NominalConcurrencyShares", "30");
    kt_expect_cell(k, o, "Queues", "64");
    kt_expect_cell(k, o, "HandSize", "8");
    kt_expect_cell(k, o, "QueueLengthLimit", "50");
    json_decref(o);

    o = limited_level("mine", 4, 5);
    kt_default(k, o);
    kt_expect(k, o, NULL,
              "spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be "
              "greater than queues (4)");
    json_decref(o);
    o = limited_level("mine", 1 << 20, 4); /* 80 bits of entropy */
    kt_default(k, o);
    kt_expect(k, o, NULL,
              "spec.limited.limitResponse.queuing.handSize: Invalid value: 4: required entropy "
              "bits of deckSize 1048576 and handSize 4 should not be greater than 60");
    json_decref(o);
    o = limited_level("mine", 1 << 20, 3); /* exactly 60 bits */
    kt_default(k, o);
    kt_expect(k, o, NULL, NULL);
    json_decref(o);

    o = limited_level("exempt", 64, 8);
    kt_default(k, o);
    json_t *lim = json_object_get(json_object_get(o, "spec"), "limited");
    json_object_set_new(lim, "lendablePercent", json_integer(101));
    json_object_set_new(lim, "nominalConcurrencyShares", json_integer(-1));
    kt_expect(k, o, NULL,
              "spec.type: Invalid value: \"Limited\": type must be 'Exempt' if and only if name "
              "is 'exempt'");
    kt_expect(k, o, NULL,
              "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, "
              "inclusive");
    kt_expect(k, o, NULL,
              "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative "
              "integer");
    json_decref(o);

    o = json_pack("{s:{s:s}, s:{s:s, s:{s:{s:s, s:{}}}}}", "metadata", "name", "rejecting", "spec",
                  "type", "Limited", "limited", "limitResponse", "type", "Reject", "queuing");
    kt_expect(k, o, NULL,
              "spec.limited.limitResponse.queuing: Forbidden: must be nil if "
              "limited.limitResponse.type is not Limited");
    json_decref(o);

    o = json_pack("{s:{s:s}, s:{s:s, s:{}}}", "metadata", "name", "exempt", "spec", "type",
                  "Exempt", "exempt");
    kt_default(k, o);
    kt_expect_cell(k, o, "NominalConcurrencyShares", "<none>");
    kt_expect_cell(k, o, "Queues", "<none>");
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flowschema_defaults_validation_and_cells),
        cmocka_unit_test(test_mandatory_specs_are_fixed),
        cmocka_unit_test(test_priority_level_defaults_validation_and_cells),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
