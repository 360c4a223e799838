/*
 * nodemetrics.c - the NodeMetrics kind (metrics.k8s.io/v1beta1): a node's CPU rate and
 * memory working set over a window, as metrics-server serves them for `kubectl top node`.
 * It is never stored: the API server answers get and list from what it scrapes of the
 * node agents' /metrics/resource (lib/apiserver/metrics_api.c), and get and list are the
 * only verbs discovery lists.
 *
 * Mirrors k8s.io/metrics pkg/apis/metrics/v1beta1 and metrics-server's pkg/api/node.go.
 *
 * Tests: tests/apiserver/test_metrics_api.c, tests/e2e/test_agent_top.sh.
 * Threading: the descriptor is static and immutable.
 */
#include "../internal.h"

static const char *const get_list[] = {"get", "list", NULL};

static const struct ck_table_column columns[] = {
    CK__NAME_COLUMN(0),
    {"CPU", "string", "", "CPU usage of the node over the window", 0, ".usage.cpu",
     CK_CELL_ABSENT_EMPTY, false},
    {"Memory", "string", "", "Memory working set of the node", 0, ".usage.memory",
     CK_CELL_ABSENT_EMPTY, false},
    {"Window", "string", "", "The window the CPU usage was measured over", 0, ".window",
     CK_CELL_ABSENT_EMPTY, false},
};

const struct ck_kind ck__kind_nodemetrics = {
    .group = "metrics.k8s.io",
    .version = "v1beta1",
    .kind = "NodeMetrics",
    .list_kind = "NodeMetricsList",
    .resource = "nodes",
    /* never stored; a key of its own all the same, never the core nodes' */
    .storage_resource = "metrics.k8s.io/nodes",
    .singular = "",
    .namespaced = false,
    .role = CK_KIND_ROLE_NODE_METRICS,
    .name_rule = CK_NAME_PATH_SEGMENT,
    .schema = "io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics",
    .verbs = get_list,
    CK__KIND_COLUMNS(columns),
};
