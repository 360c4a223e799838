/*
 * frobber.c - the Frobber kind (example.ckube.io/v1), the example of a kind
 * that is nothing but data: its schema (lib/api/schemas/example-v1.json)
 * gates spec.width behind Frobber2D and the restart policy value OnTuesday
 * behind FrobberRestartPolicyOnTuesday (lib/api/gates.c applies both), and
 * every printing column reads the object, as a CRD's additionalPrinterColumns
 * do. docs/internals/api.md walks through adding a kind like it.
 *
 * Threading: the descriptor is static and immutable.
 *
 * Tested by tests/api/test_gates.c and tests/apiserver/test_gates.c (its
 * gated fields, on and off) and test_kinds.c.
 */
#include "../internal.h"

static const struct ck_table_column columns[] = {
    CK__NAME_COLUMN(0),
    {"Height", "integer", "", "Height of the frobber.", 0, ".spec.height", CK_CELL_ABSENT_ZERO,
     false},
    {"Width", "string", "", "Width of the frobber (feature gate Frobber2D).", 0, ".spec.width",
     CK_CELL_ABSENT_NONE, false},
    {"Restart Policy", "string", "", "When to restart the frobber.", 0, ".spec.restartPolicy",
     CK_CELL_ABSENT_NONE, false},
    CK__AGE_COLUMN,
};

static const struct ck_api_feature features[] = {
    {"Frobber2D", "ALPHA", false, "1.32"},
    {"FrobberRestartPolicyOnTuesday", "ALPHA", false, "1.32"},
};

const struct ck_kind ck__kind_frobber = {
    .group = "example.ckube.io",
    .version = "v1",
    .kind = "Frobber",
    .list_kind = "FrobberList",
    .resource = "frobbers",
    .singular = "frobber",
    .namespaced = true,
    .has_generation = true,
    .schema = "io.ckube.example.v1.Frobber",
    CK__KIND_SUBRESOURCES(ck__status_subresource),
    .status_keeps_metadata = ck__status_keeps_labels,
    CK__KIND_COLUMNS(columns),
    .features = features,
    .n_features = CK__COUNT(features),
};
