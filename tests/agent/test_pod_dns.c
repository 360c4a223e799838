/*
 * test_pod_dns.c - tests for lib/agent/dns.c, a pod's DNS configuration as the kubelet
 * forms it (pkg/kubelet/network/dns/dns_test.go covers the same ground): the host's
 * resolver file read as the kubelet reads it; ClusterFirst with and without cluster DNS
 * servers and domain, on and off the host network; ClusterFirstWithHostNet, Default and
 * None; the pod's dnsConfig appended and its options merged; the nameserver and search
 * limits with their warnings; an unreadable or broken resolver file refused.
 */
#define _GNU_SOURCE /* nftw (scratch.h) */
#include "cktest.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/agent/internal.h"
#include "scratch.h"

struct fixture {
    char root[64], resolv[128];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (!f || scratch_make_dir(f->root, sizeof(f->root), "pod-dns") < 0) {
        free(f);
        return -1;
    }
    snprintf(f->resolv, sizeof(f->resolv), "%s/resolv.conf", f->root);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    scratch_remove_dir(f->root);
    free(f);
    return 0;
}

static void put_resolv(const struct fixture *f, const char *text)
{
    FILE *file = fopen(f->resolv, "w");
    assert_non_null(file);
    fputs(text, file);
    fclose(file);
}

/* The pod of namespace ns with the spec given as JSON. */
static json_t *pod_with(const char *ns, const char *spec)
{
    json_error_t jerr;
    json_t *s = json_loads(spec, 0, &jerr);
    if (!s)
        fail_msg("bad spec %s: %s", spec, jerr.text);
    return json_pack("{s:{s:s, s:s}, s:o}", "metadata", "name", "p", "namespace", ns, "spec", s);
}

/* The list joined by spaces. */
static void joined(char *const *v, size_t n, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s", i ? " " : "", v[i]);
}

static void assert_dns(const struct ck__pod_dns *d, const char *servers, const char *searches,
                       const char *options)
{
    char buf[4096];
    joined(d->servers, d->n_servers, buf, sizeof(buf));
    assert_string_equal(buf, servers);
    joined(d->searches, d->n_searches, buf, sizeof(buf));
    assert_string_equal(buf, searches);
    joined(d->options, d->n_options, buf, sizeof(buf));
    assert_string_equal(buf, options);
}

static const char *const cluster_dns[] = {"10.96.0.10"};

static const char host_resolv[] = "# the host's\n"
                                  "nameserver 192.0.2.1\n"
                                  "search old.example\n"
                                  "nameserver 192.0.2.2\n"
                                  "  search example.com. cluster.local corp.example\n"
                                  "options timeout:2\n"
                                  "options ndots:2 attempts:3\n";

static void test_resolv_conf_read_as_the_kubelet(void **state)
{
    struct fixture *f = *state;
    put_resolv(f, host_resolv);
    struct ck__dns_node node = {.resolv_conf = f->resolv};
    json_t *pod = pod_with("web", "{\"dnsPolicy\": \"Default\"}");
    struct ck__pod_dns d;
    struct ck_err err = {0};
    assert_int_equal(ck__pod_dns_config(&node, pod, &d, &err), 0);
    /* nameservers accumulate; the last search and options lines win; a trailing dot goes */
    assert_dns(&d, "192.0.2.1 192.0.2.2", "example.com cluster.local corp.example",
               "ndots:2 attempts:3");
    assert_int_equal(d.n_warnings, 0);
    ck__pod_dns_release(&d);

    /* a nameserver line without an address is an error, as is a missing file */
    put_resolv(f, "nameserver\n");
    assert_true(ck__pod_dns_config(&node, pod, &d, &err) < 0);
    assert_non_null(strstr(err.msg, "nameserver list is empty"));
    char missing[160];
    snprintf(missing, sizeof(missing), "%s/none", f->root);
    node.resolv_conf = missing;
    assert_int_equal(ck__pod_dns_config(&node, pod, &d, &err), CK_ENOENT);
    assert_non_null(strstr(err.msg, missing));
    json_decref(pod);
}

static void test_cluster_first(void **state)
{
    struct fixture *f = *state;
    put_resolv(f, host_resolv);
    struct ck__dns_node node = {cluster_dns, 1, "cluster.local", f->resolv};
    struct ck__pod_dns d;
    struct ck_err err = {0};
    /* the default policy: cluster DNS only, the cluster's search domains then the host's
       (cluster.local once), ndots:5 in place of the host's options */
    json_t *pod = pod_with("web", "{}");
    assert_int_equal(ck__pod_dns_config(&node, pod, &d, &err), 0);
    assert_dns(&d, "10.96.0.10",
               "web.svc.cluster.local svc.cluster.local cluster.local example.com corp.example",
               "ndots:5");
    ck__pod_dns_release(&d);
    json_decref(pod);

    /* on the host network ClusterFirst is Default ... */
    pod = pod_with("web", "{\"dnsPolicy\": \"ClusterFirst\", \"hostNetwork\": true}");
    assert_int_equal(ck__pod_dns_config(&node, pod, &d, &err), 0);
    assert_dns(&d, "192.0.2.1 192.0.2.2", "example.com cluster.local corp.example",
               "ndots:2 attempts:3");
    ck__pod_dns_release(&d);
    json_decref(pod);

    /* ... and ClusterFirstWithHostNet the cluster's */
    pod = pod_with("kube-system", "{\"dnsPolicy\": \"ClusterFirstWithHostNet\", "
                                  "\"hostNetwork\": true}");
    assert_int_equal(ck__pod_dns_config(&node, pod, &d, &err), 0);
    assert_dns(&d, "10.96.0.10",
               "kube-system.svc.cluster.local svc.cluster.local cluster.local example.com "
               "corp.example",
               "ndots:5");
    ck__pod_dns_release(&d);
    json_decref(pod);

    /* without a cluster domain: the host's search domains only */
    node.cluster_domain = "";
    pod = pod_with("web", "{}");
    assert_int_equal(ck__pod_dns_config(&node, pod, &d, &err), 0);
    assert_dns(&d, "10.96.0.10", "example.com cluster.local corp.example", "ndots:5");
    ck__pod_dns_release(&d);

    /* without cluster DNS servers: Default, with the kubelet's warning */
    node = (struct ck__dns_node){NULL, 0, "cluster.local", f->resolv};
    assert_int_equal(ck__pod_dns_config(&node, pod, &d, &err), 0);
    assert_dns(&d, "192.0.2.1 192.0.2.2", "example.com cluster.local corp.example",
               "ndots:2 attempts:3");
    assert_int_equal(d.n_warnings, 1);
    assert_string_equal(d.warnings[0].reason, "MissingClusterDNS");
    assert_non_null(strstr(d.warnings[0].message, "Falling back to \"Default\" policy"));
    ck__pod_dns_release(&d);
    json_decref(pod);
}

static void test_default_without_resolv_conf(void **state)
{
    (void)state;
    struct ck__dns_node node = {cluster_dns, 1, "cluster.local", ""};
    json_t *pod = pod_with("web", "{\"dnsPolicy\": \"Default\"}");
    struct ck__pod_dns d;
    struct ck_err err = {0};
    assert_int_equal(ck__pod_dns_config(&node, pod, &d, &err), 0);
    assert_dns(&d, "127.0.0.1", ".", "");
    ck__pod_dns_release(&d);
    json_decref(pod);
}

static void test_none_and_dns_config(void **state)
{
    struct fixture *f = *state;
    put_resolv(f, host_resolv);
    struct ck__dns_node node = {cluster_dns, 1, "cluster.local", f->resolv};
    struct ck__pod_dns d;
    struct ck_err err = {0};
    /* None: the pod's dnsConfig alone */
    json_t *pod = pod_with("web", "{\"dnsPolicy\": \"None\", \"dnsConfig\": {"
                                  "\"nameservers\": [\"203.0.113.5\", \"203.0.113.5\"],"
                                  "\"searches\": [\"a.example\"],"
                                  "\"options\": [{\"name\": \"ndots\", \"value\": \"1\"},"
                                  "              {\"name\": \"edns0\"}]}}");
    assert_int_equal(ck__pod_dns_config(&node, pod, &d, &err), 0);
    assert_dns(&d, "203.0.113.5", "a.example", "ndots:1 edns0");
    ck__pod_dns_release(&d);
    json_decref(pod);

    /* appended to ClusterFirst's: duplicates dropped, an option of the same name replaced */
    pod = pod_with("web", "{\"dnsConfig\": {\"nameservers\": [\"10.96.0.10\", \"203.0.113.5\"],"
                          "\"searches\": [\"svc.cluster.local\", \"b.example\"],"
                          "\"options\": [{\"name\": \"ndots\", \"value\": \"2\"},"
                          "              {\"name\": \"single-request\"}]}}");
    assert_int_equal(ck__pod_dns_config(&node, pod, &d, &err), 0);
    assert_dns(&d, "10.96.0.10 203.0.113.5",
               "web.svc.cluster.local svc.cluster.local cluster.local example.com corp.example "
               "b.example",
               "ndots:2 single-request");
    ck__pod_dns_release(&d);
    json_decref(pod);
}

static void test_limits(void **state)
{
    struct fixture *f = *state;
    /* four nameservers: three kept, and a warning saying which */
    put_resolv(f, "nameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 192.0.2.3\n"
                  "nameserver 192.0.2.4\n");
    struct ck__dns_node node = {NULL, 0, NULL, f->resolv};
    json_t *pod = pod_with("web", "{\"dnsPolicy\": \"Default\"}");
    struct ck__pod_dns d;
    struct ck_err err = {0};
    assert_int_equal(ck__pod_dns_config(&node, pod, &d, &err), 0);
    assert_int_equal(d.n_servers, 3);
    assert_int_equal(d.n_warnings, 1);
    assert_string_equal(d.warnings[0].reason, "DNSConfigForming");
    assert_non_null(strstr(d.warnings[0].message,
                           "the applied nameserver line is: 192.0.2.1 192.0.2.2 192.0.2.3"));
    ck__pod_dns_release(&d);

    /* 40 search domains: the first 32 */
    char text[8192] = "search";
    for (int i = 0; i < 40; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), " d%d.example", i);
    strcat(text, "\n");
    put_resolv(f, text);
    assert_int_equal(ck__pod_dns_config(&node, pod, &d, &err), 0);
    assert_int_equal(d.n_searches, 32);
    assert_string_equal(d.searches[31], "d31.example");
    assert_int_equal(d.n_warnings, 1);
    assert_non_null(strstr(d.warnings[0].message, "Search Line limits were exceeded"));
    ck__pod_dns_release(&d);

    /* a name longer than 253 characters is dropped; the line is cut to 2048 characters */
    char longname[300];
    memset(longname, 'a', 260);
    longname[260] = '\0';
    snprintf(text, sizeof(text), "search x.example %s", longname);
    for (int i = 0; i < 20; i++) { /* 20 names of 120 characters: over 2048 together */
        char name[121];
        memset(name, 'b' + i % 20, 110);
        snprintf(name + 110, sizeof(name) - 110, ".%02d.examp", i);
        snprintf(text + strlen(text), sizeof(text) - strlen(text), " %s", name);
    }
    strcat(text, "\n");
    put_resolv(f, text);
    assert_int_equal(ck__pod_dns_config(&node, pod, &d, &err), 0);
    size_t line = 0;
    for (size_t i = 0; i < d.n_searches; i++) {
        assert_true(strlen(d.searches[i]) <= 253);
        line += strlen(d.searches[i]) + (i ? 1 : 0);
    }
    assert_true(line <= 2048);
    assert_true(line > 2048 - 121); /* no more cut than needed */
    assert_string_equal(d.searches[0], "x.example");
    assert_int_equal(d.n_warnings, 1);
    ck__pod_dns_release(&d);
    json_decref(pod);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_resolv_conf_read_as_the_kubelet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_without_resolv_conf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_none_and_dns_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
