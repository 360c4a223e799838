/*
 * test_rules.c - the rule builder (lib/proxy/rules.c) against golden transactions.
 *
 * Each case tests/data/proxy/NAME.json holds a config and a list of steps; each step is
 * the Services and EndpointSlices at that moment and the sync mode. The builder runs the
 * steps in order, each from the state the previous one left, and the transactions,
 * joined with a "# step N MODE" line before each, must equal tests/data/proxy/NAME.nft
 * byte for byte (CKUBE_UPDATE_GOLDEN=1 rewrites the files instead; review the diff).
 *
 * When the test runs as root it moves itself into a network namespace of its own
 * (unshare(CLONE_NEWNET)) and applies every transaction there through libnftables, so
 * the kernel checks the text too: the machine's own tables are never touched. Without
 * root that part is skipped and says why.
 *
 * The structural tests below the golden ones check what the golden files show, without
 * relying on them: endpoint choice, affinity, traffic policies, partial syncs.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <jansson.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckube/proxy.h"
#include "netns.h"

static bool in_netns;

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

struct objs {
    const json_t **v;
    size_t n;
};

static struct objs items(const json_t *a)
{
    struct objs o = {calloc(json_array_size(a) + 1, sizeof(json_t *)), json_array_size(a)};
    for (size_t i = 0; i < o.n; i++)
        o.v[i] = json_array_get(a, i);
    return o;
}

static enum ck_proxy_sync_mode mode_of(const char *m)
{
    if (m && strcmp(m, "partial") == 0)
        return CK_PROXY_SYNC_PARTIAL;
    if (m && strcmp(m, "full") == 0)
        return CK_PROXY_SYNC_FULL;
    return CK_PROXY_SYNC_ADOPT;
}

static void run_case(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.json", CKUBE_PROXY_DATA, name);
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    if (!doc)
        fail_msg("%s: %s", path, jerr.text);
    const json_t *cfgj = json_object_get(doc, "config");
    struct ck_proxy_config cfg = {
        .hostname = str(cfgj, "hostname"),
        .cluster_cidr = str(cfgj, "clusterCIDR"),
        .masquerade_all = json_is_true(json_object_get(cfgj, "masqueradeAll")),
        .nodeport_addresses = str(cfgj, "nodePortAddresses"),
    };
    struct ck_proxy_state *state = NULL;
    char *all = NULL;
    size_t all_len = 0;
    FILE *out = open_memstream(&all, &all_len);
    const json_t *step;
    size_t i;
    json_array_foreach(json_object_get(doc, "steps"), i, step)
    {
        struct objs svcs = items(json_object_get(step, "services"));
        struct objs slices = items(json_object_get(step, "slices"));
        struct objs ips = items(json_object_get(step, "nodeIPs"));
        const char **ipstr = calloc(ips.n + 1, sizeof(char *));
        for (size_t k = 0; k < ips.n; k++)
            ipstr[k] = json_string_value(ips.v[k]);
        struct ck_proxy_input in = {svcs.v, svcs.n, slices.v, slices.n, ipstr, ips.n, &cfg};
        const char *mode = str(step, "mode");
        char *text = NULL;
        struct ck_proxy_state *next = NULL;
        struct ck_err err = {0};
        int r = ck_proxy_build(&in, state, mode_of(mode), &text, &next, NULL, &err);
        if (r < 0)
            fail_msg("%s step %zu: %s", name, i, err.msg);
        fprintf(out, "# step %zu %s\n%s", i, mode ? mode : "adopt", text);
        if (in_netns) {
            r = ck_proxy_nft_run(text, false, &err);
            if (r < 0)
                fail_msg("%s step %zu: the kernel refused the transaction: %s", name, i, err.msg);
        }
        free(text);
        ck_proxy_state_free(state);
        state = next;
        free(svcs.v);
        free(slices.v);
        free(ips.v);
        free(ipstr);
    }
    fclose(out);
    ck_proxy_state_free(state);
    snprintf(path, sizeof(path), "%s/%s.nft", CKUBE_PROXY_DATA, name);
    if (getenv("CKUBE_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fwrite(all, 1, all_len, f);
        fclose(f);
    } else {
        char *want = read_all(path);
        if (!want)
            fail_msg("no golden file %s (CKUBE_UPDATE_GOLDEN=1 writes it)", path);
        if (strcmp(want, all) != 0) {
            fprintf(stderr, "--- got for %s:\n%s", name, all);
            fail_msg("%s differs from %s", name, path);
        }
        free(want);
    }
    free(all);
    json_decref(doc);
    if (in_netns) { /* leave the namespace's table empty for the next case */
        struct ck_err err = {0};
        assert_int_equal(ck_proxy_cleanup(&err), 0);
    }
}

static void test_golden_clusterip(void **s)
{
    (void)s;
    run_case("clusterip");
}

static void test_golden_nodeport_local(void **s)
{
    (void)s;
    run_case("nodeport_local");
}

static void test_golden_partial(void **s)
{
    (void)s;
    run_case("partial");
}

/* Builds step 0 of a case; returns the document (the caller frees it). */
static json_t *load_step(const char *name, struct ck_proxy_config *cfg, struct objs *svcs,
                         struct objs *slices)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.json", CKUBE_PROXY_DATA, name);
    json_t *doc = json_load_file(path, 0, NULL);
    assert_non_null(doc);
    const json_t *cfgj = json_object_get(doc, "config");
    *cfg = (struct ck_proxy_config){.hostname = str(cfgj, "hostname"),
                                    .cluster_cidr = str(cfgj, "clusterCIDR")};
    const json_t *step = json_array_get(json_object_get(doc, "steps"), 0);
    *svcs = items(json_object_get(step, "services"));
    *slices = items(json_object_get(step, "slices"));
    return doc;
}

static void test_partial_without_state_is_refused(void **s)
{
    (void)s;
    struct ck_proxy_config cfg = {.hostname = "node-a"};
    struct ck_proxy_input in = {.config = &cfg};
    char *text = NULL;
    struct ck_proxy_state *next = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_proxy_build(&in, NULL, CK_PROXY_SYNC_PARTIAL, &text, &next, NULL, &err),
                     CK_EINVAL);
    assert_null(text);
    assert_null(next);
}

static void test_unchanged_partial_sync_writes_nothing(void **s)
{
    (void)s;
    struct ck_proxy_config cfg;
    struct objs svcs, slices;
    json_t *doc = load_step("clusterip", &cfg, &svcs, &slices);
    struct ck_proxy_input in = {svcs.v, svcs.n, slices.v, slices.n, NULL, 0, &cfg};
    char *text = NULL;
    struct ck_proxy_state *first = NULL, *second = NULL;
    struct ck_proxy_build_stats st;
    struct ck_err err = {0};
    assert_int_equal(ck_proxy_build(&in, NULL, CK_PROXY_SYNC_ADOPT, &text, &first, &st, &err), 0);
    assert_true(st.chains_written > 0);
    free(text);
    assert_int_equal(ck_proxy_build(&in, first, CK_PROXY_SYNC_PARTIAL, &text, &second, &st, &err),
                     0);
    assert_int_equal(st.chains_written, 0);
    assert_int_equal(st.elements_change, 0);
    assert_int_equal(st.stale_chains, 0);
    /* only the (idempotent) table line */
    assert_non_null(strchr(text, '\n'));
    assert_string_equal(strchr(text, '\n') + 1, "");
    free(text);
    ck_proxy_state_free(first);
    ck_proxy_state_free(second);
    free(svcs.v);
    free(slices.v);
    json_decref(doc);
}

struct seen_health {
    int port, local;
    char name[64];
    int calls;
};

static void health_cb(const char *ns, const char *name, int port, int local, void *arg)
{
    struct seen_health *h = arg;
    (void)ns;
    h->calls++;
    h->port = port;
    h->local = local;
    snprintf(h->name, sizeof(h->name), "%s", name);
}

static void test_health_check_node_ports_count_local_ready_endpoints(void **s)
{
    (void)s;
    struct ck_proxy_config cfg;
    struct objs svcs, slices;
    json_t *doc = load_step("nodeport_local", &cfg, &svcs, &slices);
    struct ck_proxy_input in = {svcs.v, svcs.n, slices.v, slices.n, NULL, 0, &cfg};
    char *text = NULL;
    struct ck_proxy_state *st = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_proxy_build(&in, NULL, CK_PROXY_SYNC_ADOPT, &text, &st, NULL, &err), 0);
    struct seen_health h = {0};
    ck_proxy_state_health_ports(st, health_cb, &h);
    /* only "lb" has externalTrafficPolicy Local and a healthCheckNodePort */
    assert_int_equal(h.calls, 1);
    assert_string_equal(h.name, "lb");
    assert_int_equal(h.port, 32000);
    assert_int_equal(h.local, 1);
    free(text);
    ck_proxy_state_free(st);
    free(svcs.v);
    free(slices.v);
    json_decref(doc);
}

int main(void)
{
    in_netns = enter_private_netns();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_clusterip),
        cmocka_unit_test(test_golden_nodeport_local),
        cmocka_unit_test(test_golden_partial),
        cmocka_unit_test(test_partial_without_state_is_refused),
        cmocka_unit_test(test_unchanged_partial_sync_writes_nothing),
        cmocka_unit_test(test_health_check_node_ports_count_local_ready_endpoints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
