/*
 * test_netpol.c - the NetworkPolicy rule builder (lib/proxy/netpol.c) from fake objects.
 *
 * A small cluster as jansson objects (two namespaces, pods on this node and another, a
 * host-network pod) and NetworkPolicies of each kind of peer and port go in; the lines of
 * the transaction that carry each policy's meaning are checked one by one: which pods
 * are isolated for which direction, the peer sets (pods by podSelector, by
 * namespaceSelector, both, ipBlock less its except ranges), numeric, ranged and named
 * ports, protocols, the verdicts and the default-deny at the end of each chain.
 *
 * As root the test moves into a network namespace of its own (unshare(CLONE_NEWNET))
 * and has the kernel apply each transaction through libnftables, twice (the second
 * replaces the table the first made); the machine's tables are never touched.
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

static json_t *ns(const char *name, const char *team)
{
    return json_pack("{s:s, s:{s:s, s:{s:s, s:s}}}", "kind", "Namespace", "metadata", "name", name,
                     "labels", "kubernetes.io/metadata.name", name, "team", team);
}

/* A running pod NAME in NS on NODE at IP with label app=APP; its container names port
 * 8080/TCP "http" and 5353/UDP "dns". */
static json_t *pod(const char *nsname, const char *name, const char *app, const char *node,
                   const char *ip)
{
    return json_pack("{s:{s:s, s:s, s:{s:s}}, s:{s:s, s:[{s:s, s:[{s:s, s:i}, {s:s, s:i, "
                     "s:s}]}]}, s:{s:s, s:s, s:[{s:s}]}}",
                     "metadata", "namespace", nsname, "name", name, "labels", "app", app, "spec",
                     "nodeName", node, "containers", "name", "c", "ports", "name", "http",
                     "containerPort", 8080, "name", "dns", "containerPort", 5353, "protocol", "UDP",
                     "status", "phase", "Running", "podIP", ip, "podIPs", "ip", ip);
}

static json_t *policy(const char *nsname, const char *name, const char *spec)
{
    json_error_t e;
    json_t *s = json_loads(spec, 0, &e);
    if (!s)
        fail_msg("policy %s: %s", name, e.text);
    return json_pack("{s:{s:s, s:s}, s:o}", "metadata", "namespace", nsname, "name", name, "spec",
                     s);
}

struct cluster {
    json_t *nss[2], *pods[6], *pols[8];
    size_t n_pols;
};

static void cluster_init(struct cluster *c)
{
    c->nss[0] = ns("a", "red");
    c->nss[1] = ns("b", "blue");
    c->pods[0] = pod("a", "server", "server", "n1", "10.244.0.10");
    c->pods[1] = pod("a", "client", "client", "n1", "10.244.0.11");
    c->pods[2] = pod("a", "other", "other", "n1", "10.244.0.12");
    c->pods[3] = pod("b", "client", "client", "n1", "10.244.0.20");
    c->pods[4] = pod("b", "far", "server", "n2", "10.244.1.5"); /* on another node */
    c->pods[5] = pod("a", "host", "server", "n1", "192.168.77.10");
    json_object_set_new(json_object_get(c->pods[5], "spec"), "hostNetwork", json_true());
    c->n_pols = 0;
}

static void cluster_release(struct cluster *c)
{
    for (size_t i = 0; i < 2; i++)
        json_decref(c->nss[i]);
    for (size_t i = 0; i < 6; i++)
        json_decref(c->pods[i]);
    for (size_t i = 0; i < c->n_pols; i++)
        json_decref(c->pols[i]);
}

static char *build(struct cluster *c, struct ck_netpol_build_stats *st)
{
    struct ck_netpol_input in = {(const json_t *const *)c->pols,
                                 c->n_pols,
                                 (const json_t *const *)c->pods,
                                 6,
                                 (const json_t *const *)c->nss,
                                 2,
                                 "n1"};
    char *text = NULL;
    struct ck_err err = {0};
    if (ck_netpol_build(&in, &text, st, &err) < 0)
        fail_msg("build: %s", err.msg);
    if (in_netns) {
        for (int i = 0; i < 2; i++)
            if (ck_proxy_nft_run(text, false, &err) < 0)
                fail_msg("the kernel refused the transaction: %s\n%s", err.msg, text);
    }
    return text;
}

#define T "add rule ip ckube-netpol "

static void has(const char *text, const char *line)
{
    if (!strstr(text, line))
        fail_msg("no line\n  %s\nin\n%s", line, text);
}

static void has_not(const char *text, const char *line)
{
    if (strstr(text, line))
        fail_msg("an unexpected line\n  %s\nin\n%s", line, text);
}

static void test_no_policy(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct ck_netpol_build_stats st;
    char *text = build(&c, &st);
    has(text,
        "add table ip ckube-netpol\ndelete table ip ckube-netpol\nadd table ip ckube-netpol\n");
    has(text, "add chain ip ckube-netpol forward { type filter hook forward priority -5 ; policy "
              "accept ; }\n");
    has(text, T "forward ct state established,related accept\n");
    has(text, T "forward ip saddr @egress-isolated jump egress\n");
    has(text, T "forward ip daddr @ingress-isolated jump ingress\n");
    has_not(text, "add element");
    assert_int_equal(st.ingress_isolated, 0);
    assert_int_equal(st.egress_isolated, 0);
    free(text);
    cluster_release(&c);
}

/* Default deny in a, then an allow from app=client of a only, to TCP 8080. */
static void test_pod_selector(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    c.pols[c.n_pols++] =
        policy("a", "deny", "{\"podSelector\": {}, \"policyTypes\": [\"Ingress\"]}");
    c.pols[c.n_pols++] = policy(
        "a", "allow-client",
        "{\"podSelector\": {\"matchLabels\": {\"app\": \"server\"}}, \"policyTypes\": "
        "[\"Ingress\"], \"ingress\": [{\"from\": [{\"podSelector\": {\"matchLabels\": {\"app\": "
        "\"client\"}}}], \"ports\": [{\"protocol\": \"TCP\", \"port\": 8080}]}]}");
    struct ck_netpol_build_stats st;
    char *text = build(&c, &st);
    /* allow-client sorts first: pol-0; deny (no ingress rule): pol-1 */
    has(text, "add element ip ckube-netpol pol-0-pods { 10.244.0.10 }\n");
    has(text, "add element ip ckube-netpol pol-0-in-0-peers { 10.244.0.11 }\n");
    has(text, T "ingress ip daddr @pol-0-pods ip saddr @pol-0-in-0-peers meta l4proto tcp th "
                "dport 8080 accept comment \"a/allow-client\"\n");
    /* every pod of a on this node: not the host-network one, not b's */
    has(text, "add element ip ckube-netpol pol-1-pods { 10.244.0.10-10.244.0.12 }\n");
    has(text, "add element ip ckube-netpol ingress-isolated { 10.244.0.10-10.244.0.12 }\n");
    has_not(text, "add element ip ckube-netpol egress-isolated");
    has_not(text, "comment \"a/deny\"");
    /* the end of each chain drops, after every allow */
    const char *allow = strstr(text, T "ingress ip daddr"), *drop = strstr(text, T "ingress drop");
    assert_non_null(drop);
    assert_true(allow < drop);
    assert_int_equal(st.ingress_isolated, 3);
    assert_int_equal(st.egress_isolated, 0);
    free(text);
    cluster_release(&c);
}

/* namespaceSelector alone, with a podSelector, named ports, ranges, any port. */
static void test_namespace_selector_and_ports(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    c.pols[c.n_pols++] = policy(
        "a", "from-blue",
        "{\"podSelector\": {\"matchLabels\": {\"app\": \"server\"}}, \"ingress\": ["
        "{\"from\": [{\"namespaceSelector\": {\"matchLabels\": {\"team\": \"blue\"}}}],"
        " \"ports\": [{\"port\": \"http\"}, {\"protocol\": \"UDP\", \"port\": \"dns\"},"
        " {\"protocol\": \"SCTP\", \"port\": 9000, \"endPort\": 9010}, {\"protocol\": \"UDP\"}]},"
        "{\"from\": [{\"namespaceSelector\": {}, \"podSelector\": {\"matchLabels\": {\"app\": "
        "\"client\"}}}]},"
        "{}]}");
    char *text = build(&c, NULL);
    /* the namespace selector takes b's pods on every node */
    has(text, "add element ip ckube-netpol pol-0-in-0-peers { 10.244.0.20, 10.244.1.5 }\n");
    has(text, "add set ip ckube-netpol pol-0-in-0-p0 { type ipv4_addr . inet_proto . "
              "inet_service ; }\n");
    has(text, "add element ip ckube-netpol pol-0-in-0-p0 { 10.244.0.10 . tcp . 8080 }\n");
    has(text, "add element ip ckube-netpol pol-0-in-0-p1 { 10.244.0.10 . udp . 5353 }\n");
    has(text, T "ingress ip daddr @pol-0-pods ip saddr @pol-0-in-0-peers ip daddr . meta "
                "l4proto . th dport @pol-0-in-0-p0 accept");
    has(text, T "ingress ip daddr @pol-0-pods ip saddr @pol-0-in-0-peers meta l4proto sctp th "
                "dport 9000-9010 accept");
    has(text, T "ingress ip daddr @pol-0-pods ip saddr @pol-0-in-0-peers meta l4proto udp accept");
    /* both selectors: app=client in every namespace */
    has(text, "add element ip ckube-netpol pol-0-in-1-peers { 10.244.0.11, 10.244.0.20 }\n");
    has(text, T "ingress ip daddr @pol-0-pods ip saddr @pol-0-in-1-peers accept");
    /* an empty rule: everything */
    has(text, T "ingress ip daddr @pol-0-pods accept comment \"a/from-blue\"\n");
    /* policyTypes unset and no egress rules: Ingress only */
    has_not(text, "add element ip ckube-netpol egress-isolated");
    free(text);
    cluster_release(&c);
}

/* Egress: deny all for a's client, an ipBlock with except, named ports of peer pods. */
static void test_egress_and_ip_block(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    c.pols[c.n_pols++] = policy("a", "client-deny",
                                "{\"podSelector\": {\"matchLabels\": {\"app\": \"client\"}}, "
                                "\"policyTypes\": [\"Egress\"]}");
    c.pols[c.n_pols++] =
        policy("a", "other-out",
               "{\"podSelector\": {\"matchLabels\": {\"app\": \"other\"}}, \"egress\": ["
               "{\"to\": [{\"ipBlock\": {\"cidr\": \"10.0.0.0/8\", \"except\": [\"10.1.0.0/16\", "
               "\"10.200.0.0/24\"]}}, {\"ipBlock\": {\"cidr\": \"2001:db8::/64\"}}]},"
               "{\"to\": [{\"podSelector\": {\"matchLabels\": {\"app\": \"server\"}}}], \"ports\": "
               "[{\"port\": \"http\"}]}]}");
    struct ck_netpol_build_stats st;
    char *text = build(&c, &st);
    has(text, "add element ip ckube-netpol egress-isolated { 10.244.0.11-10.244.0.12 }\n");
    /* other-out's policyTypes default to Ingress and Egress: it has egress rules */
    has(text, "add element ip ckube-netpol ingress-isolated { 10.244.0.12 }\n");
    has(text, "add element ip ckube-netpol pol-1-eg-0-peers { 10.0.0.0-10.0.255.255, "
              "10.2.0.0-10.199.255.255, 10.200.1.0-10.255.255.255 }\n");
    has(text, T "egress ip saddr @pol-1-pods ip daddr @pol-1-eg-0-peers return comment "
                "\"a/other-out\"\n");
    /* the named port resolves against the peer pods of a with app=server */
    has(text, "add element ip ckube-netpol pol-1-eg-1-p0 { 10.244.0.10 . tcp . 8080 }\n");
    has(text, T "egress ip saddr @pol-1-pods ip daddr @pol-1-eg-1-peers ip daddr . meta l4proto "
                ". th dport @pol-1-eg-1-p0 return");
    has_not(text, "comment \"a/client-deny\"");
    has(text, T "egress drop\n");
    assert_int_equal(st.egress_isolated, 2);
    assert_int_equal(st.ingress_isolated, 1);
    free(text);
    cluster_release(&c);
}

/* A policy selecting none of the node's pods changes nothing; the order of the input
 * does not change the text. */
static void test_remote_only_and_order(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    c.pols[c.n_pols++] = policy("b", "far",
                                "{\"podSelector\": {\"matchLabels\": {\"app\": "
                                "\"server\"}}}");
    c.pols[c.n_pols++] = policy("a", "deny", "{\"podSelector\": {}}");
    char *one = build(&c, NULL);
    has_not(one, "comment \"b/far\"");
    has_not(one, "pol-1-pods");
    json_t *t = c.pols[0];
    c.pols[0] = c.pols[1];
    c.pols[1] = t;
    json_t *p = c.pods[0];
    c.pods[0] = c.pods[3];
    c.pods[3] = p;
    char *two = build(&c, NULL);
    assert_string_equal(one, two);
    free(one);
    free(two);
    cluster_release(&c);
}

/* nftables keeps 128 bytes of a comment: a policy named at the limit still applies. */
static void test_long_name(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    char name[254];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    c.pols[c.n_pols++] = policy("a", name, "{\"podSelector\": {}, \"ingress\": [{}]}");
    char *text = build(&c, NULL);
    const char *at = strstr(text, "comment \"a/nnn");
    assert_non_null(at);
    assert_int_equal(strcspn(at + 9, "\""), 127);
    free(text);
    cluster_release(&c);
}

int main(void)
{
    in_netns = enter_private_netns();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_policy),
        cmocka_unit_test(test_pod_selector),
        cmocka_unit_test(test_namespace_selector_and_ports),
        cmocka_unit_test(test_egress_and_ip_block),
        cmocka_unit_test(test_remote_only_and_order),
        cmocka_unit_test(test_long_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
