/*
 * podmetrics.c - the PodMetrics kind (metrics.k8s.io/v1beta1): the CPU rate and memory
 * working set of each container of a pod over a window, as metrics-server serves them
 * for `kubectl top pod`. It is never stored: the API server answers get and list from
 * what it scrapes of the node agents' /metrics/resource (lib/apiserver/metrics_api.c),
 * and get and list are the only verbs discovery lists.
 *
 * Mirrors k8s.io/metrics pkg/apis/metrics/v1beta1 and metrics-server's pkg/api/pod.go.
 *
 * Tests: tests/apiserver/test_metrics_api.c, tests/e2e/test_agent_top.sh.
 * Threading: the descriptor is static and immutable.
 */
#include "../internal.h"

static const char *const get_list[] = {"get", "list", NULL};

static const struct ck_table_column columns[] = {
    CK__NAME_COLUMN(0),
    {"Window", "string", "", "The window the CPU usage was measured over", 0, ".window",
     CK_CELL_ABSENT_EMPTY, false},
};

const struct ck_kind ck__kind_podmetrics = {
    .group = "metrics.k8s.io",
    .version = "v1beta1",
    .kind = "PodMetrics",
    .list_kind = "PodMetricsList",
    .resource = "pods",
    /* never stored; a key of its own all the same, never the core pods' */
    .storage_resource = "metrics.k8s.io/pods",
    .singular = "",
    .namespaced = true,
    .role = CK_KIND_ROLE_POD_METRICS,
    .name_rule = CK_NAME_PATH_SEGMENT,
    .schema = "io.k8s.metrics.pkg.apis.metrics.v1beta1.PodMetrics",
    .verbs = get_list,
    CK__KIND_COLUMNS(columns),
};
