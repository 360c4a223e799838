/*
 * test_answer.c - the answer builder (lib/dns/answer.c): queries built with ldns, answers
 * parsed with ldns and checked section by section against what CoreDNS's kubernetes
 * plugin answers for the same objects (kubeadm's Corefile: pods insecure, fallthrough
 * in-addr.arpa ip6.arpa, ttl 30).
 */
#include "cktest.h"

#include <jansson.h>
#include <ldns/ldns.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/dns/internal.h"
#include "ckube/client.h"

struct fixture {
    struct ck_indexer *services, *slices, *namespaces;
    struct ck__dns_view view;
    int lookups;
};

static void add(struct ck_indexer *ix, json_t *obj)
{
    assert_non_null(obj);
    assert_int_equal(ck_indexer_add(ix, obj, NULL), 0);
    json_decref(obj);
}

static json_t *service(const char *ns, const char *name, const char *type, json_t *ips,
                       json_t *ports)
{
    json_t *spec = json_pack("{s:s, s:o}", "type", type, "ports", ports ? ports : json_array());
    if (ips) {
        json_object_set(spec, "clusterIP", json_array_get(ips, 0));
        json_object_set_new(spec, "clusterIPs", ips);
    }
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", "v1", "kind", "Service",
                     "metadata", "namespace", ns, "name", name, "spec", spec);
}

static json_t *port(const char *name, const char *proto, int number)
{
    return json_pack("{s:s, s:s, s:i}", "name", name, "protocol", proto, "port", number);
}

static json_t *endpoint(const char *ip, const char *hostname, int ready)
{
    json_t *ep = json_pack("{s:[s], s:{}}", "addresses", ip, "conditions");
    if (hostname)
        json_object_set_new(ep, "hostname", json_string(hostname));
    if (ready >= 0)
        json_object_set_new(json_object_get(ep, "conditions"), "ready", json_boolean(ready));
    return ep;
}

static json_t *slice(const char *ns, const char *name, const char *svc, json_t *ports,
                     json_t *endpoints)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:s, s:o, s:o}", "apiVersion",
                     "discovery.k8s.io/v1", "kind", "EndpointSlice", "metadata", "namespace", ns,
                     "name", name, "labels", "kubernetes.io/service-name", svc, "addressType",
                     "IPv4", "ports", ports, "endpoints", endpoints);
}

/* The upstream of the ExternalName tests: example.org is 192.0.2.1 and 2001:db8::1. */
static ldns_pkt *fake_lookup(void *arg, const ldns_rdf *name, ldns_rr_type type)
{
    struct fixture *f = arg;
    f->lookups++;
    ldns_pkt *p = ldns_pkt_query_new(ldns_rdf_clone(name), type, LDNS_RR_CLASS_IN, 0);
    char *owner = ldns_rdf2str(name);
    if (strcmp(owner, "example.org.") == 0) {
        char text[256];
        snprintf(text, sizeof(text), "%s 300 IN %s", owner,
                 type == LDNS_RR_TYPE_A ? "A 192.0.2.1" : "AAAA 2001:db8::1");
        ldns_rr *rr = NULL;
        assert_int_equal(ldns_rr_new_frm_str(&rr, text, 0, NULL, NULL), LDNS_STATUS_OK);
        ldns_pkt_push_rr(p, LDNS_SECTION_ANSWER, rr);
    }
    LDNS_FREE(owner);
    return p;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_int_equal(ck_indexer_new(&f->services, NULL), 0);
    assert_int_equal(ck_indexer_new(&f->slices, NULL), 0);
    assert_int_equal(ck_indexer_new(&f->namespaces, NULL), 0);
    assert_int_equal(ck__dns_add_indices(f->services, f->slices, NULL), 0);
    const char *namespaces[] = {"default", "kube-system", "quiet"};
    for (size_t i = 0; i < 3; i++)
        add(f->namespaces, json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                                     "metadata", "name", namespaces[i]));
    add(f->services, service("default", "web", "ClusterIP", json_pack("[s]", "10.96.0.20"),
                             json_pack("[o, o]", port("http", "TCP", 80), port("dns", "UDP", 53))));
    add(f->services, service("default", "web6", "ClusterIP", json_pack("[s]", "fd00::20"),
                             json_pack("[o]", port("http", "TCP", 80))));
    add(f->services,
        service("default", "dual", "ClusterIP", json_pack("[s, s]", "10.96.0.21", "fd00::21"),
                json_pack("[o]", port("http", "TCP", 80))));
    add(f->services, service("kube-system", "kube-dns", "ClusterIP", json_pack("[s]", "10.96.0.10"),
                             json_pack("[o]", port("dns", "UDP", 53))));
    add(f->services, service("default", "db", "ClusterIP", json_pack("[s]", "None"),
                             json_pack("[o]", port("pg", "TCP", 5432))));
    add(f->slices,
        slice("default", "db-abcde", "db", json_pack("[o]", port("pg", "TCP", 5432)),
              json_pack("[o, o, o]", endpoint("10.244.0.5", "db-0", 1),
                        endpoint("10.244.0.6", "db-1", -1), endpoint("10.244.0.7", "db-2", 0))));
    add(f->slices, slice("default", "web-xyz", "web", json_pack("[o]", port("http", "TCP", 8080)),
                         json_pack("[o]", endpoint("10.244.1.9", NULL, 1))));
    add(f->services, service("default", "lonely", "ClusterIP", json_pack("[s]", "None"), NULL));
    const char *externals[][2] = {{"ext", "example.org"},
                                  {"inner", "web.default.svc.cluster.local"}};
    for (size_t i = 0; i < 2; i++) {
        json_t *svc = service("default", externals[i][0], "ExternalName", NULL, NULL);
        json_object_set_new(json_object_get(svc, "spec"), "externalName",
                            json_string(externals[i][1]));
        add(f->services, svc);
    }
    f->view = (struct ck__dns_view){
        .services = f->services,
        .slices = f->slices,
        .namespaces = f->namespaces,
        .zone = "cluster.local.",
        .ttl = 30,
        .serial = 1234,
        .synced = true,
        .local_ips = {"10.96.0.10"},
        .n_local_ips = 1,
        .lookup = fake_lookup,
        .lookup_arg = f,
    };
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ck_indexer_free(f->services);
    ck_indexer_free(f->slices);
    ck_indexer_free(f->namespaces);
    free(f);
    return 0;
}

/* ---- asking --------------------------------------------------------------- */

struct q {
    const char *name;
    ldns_rr_type type;
    bool tcp;
    uint16_t edns; /* 0: no OPT */
    uint8_t edns_version;
};

static uint8_t *query_wire(const struct q *q, uint16_t id, size_t *ret_len)
{
    ldns_pkt *p = NULL;
    assert_int_equal(ldns_pkt_query_new_frm_str(&p, q->name, q->type, LDNS_RR_CLASS_IN, LDNS_RD),
                     LDNS_STATUS_OK);
    ldns_pkt_set_id(p, id);
    if (q->edns) {
        ldns_pkt_set_edns_udp_size(p, q->edns);
        ldns_pkt_set_edns_version(p, q->edns_version);
    }
    uint8_t *w = NULL;
    assert_int_equal(ldns_pkt2wire(&w, p, ret_len), LDNS_STATUS_OK);
    ldns_pkt_free(p);
    return w;
}

/* Asks the builder; returns the parsed answer (NULL unless the verdict is ANSWER). */
static ldns_pkt *ask_verdict(struct fixture *f, const struct q *q, int *ret_verdict,
                             size_t *ret_size)
{
    size_t len;
    uint8_t *w = query_wire(q, 4242, &len);
    uint8_t *out = NULL;
    size_t out_len = 0;
    int v = ck__dns_handle(&f->view, w, len, q->tcp, &out, &out_len);
    free(w);
    *ret_verdict = v;
    if (v != CK__DNS_ANSWER)
        return NULL;
    ldns_pkt *a = NULL;
    assert_int_equal(ldns_wire2pkt(&a, out, out_len), LDNS_STATUS_OK);
    if (ret_size)
        *ret_size = out_len;
    free(out);
    assert_int_equal(ldns_pkt_id(a), 4242);
    assert_true(ldns_pkt_qr(a));
    assert_true(ldns_pkt_rd(a));
    return a;
}

static ldns_pkt *ask(struct fixture *f, const char *name, ldns_rr_type type)
{
    int v;
    struct q q = {.name = name, .type = type};
    ldns_pkt *a = ask_verdict(f, &q, &v, NULL);
    assert_int_equal(v, CK__DNS_ANSWER);
    return a;
}

static char *rdata(const ldns_rr *rr, size_t i)
{
    static char buf[8][512];
    static int k;
    char *s = ldns_rdf2str(ldns_rr_rdf(rr, i));
    char *out = buf[k++ % 8];
    snprintf(out, 512, "%s", s);
    LDNS_FREE(s);
    return out;
}

static const ldns_rr *rr_at(const ldns_pkt *p, ldns_pkt_section sec, size_t i)
{
    ldns_rr_list *l = sec == LDNS_SECTION_ANSWER      ? ldns_pkt_answer(p)
                      : sec == LDNS_SECTION_AUTHORITY ? ldns_pkt_authority(p)
                                                      : ldns_pkt_additional(p);
    assert_true(i < ldns_rr_list_rr_count(l));
    return ldns_rr_list_rr(l, i);
}

static void assert_owner(const ldns_rr *rr, const char *name)
{
    char *s = ldns_rdf2str(ldns_rr_owner(rr));
    assert_string_equal(s, name);
    LDNS_FREE(s);
}

/* The NODATA / NXDOMAIN shape: rcode, AA, nothing but our SOA in authority. */
static void assert_negative(ldns_pkt *a, ldns_pkt_rcode rcode)
{
    assert_int_equal(ldns_pkt_get_rcode(a), rcode);
    assert_true(ldns_pkt_aa(a));
    assert_int_equal(ldns_pkt_ancount(a), 0);
    assert_int_equal(ldns_pkt_nscount(a), 1);
    const ldns_rr *soa = rr_at(a, LDNS_SECTION_AUTHORITY, 0);
    assert_int_equal(ldns_rr_get_type(soa), LDNS_RR_TYPE_SOA);
    assert_owner(soa, "cluster.local.");
    assert_string_equal(rdata(soa, 0), "ns.dns.cluster.local.");
    assert_string_equal(rdata(soa, 1), "hostmaster.cluster.local.");
    assert_int_equal(ldns_rdf2native_int32(ldns_rr_rdf(soa, 2)), 1234);
    assert_int_equal(ldns_rdf2native_int32(ldns_rr_rdf(soa, 6)), 30);
    assert_int_equal(ldns_rr_ttl(soa), 30);
    ldns_pkt_free(a);
}

/* ---- services ------------------------------------------------------------- */

static void test_cluster_ip_service_is_its_a_record(void **state)
{
    ldns_pkt *a = ask(*state, "web.default.svc.cluster.local.", LDNS_RR_TYPE_A);
    assert_int_equal(ldns_pkt_get_rcode(a), LDNS_RCODE_NOERROR);
    assert_true(ldns_pkt_aa(a));
    assert_int_equal(ldns_pkt_ancount(a), 1); /* one record for two ports */
    const ldns_rr *rr = rr_at(a, LDNS_SECTION_ANSWER, 0);
    assert_int_equal(ldns_rr_get_type(rr), LDNS_RR_TYPE_A);
    assert_owner(rr, "web.default.svc.cluster.local.");
    assert_string_equal(rdata(rr, 0), "10.96.0.20");
    assert_int_equal(ldns_rr_ttl(rr), 30);
    assert_false(ldns_pkt_edns(a)); /* no OPT asked, none answered */
    ldns_pkt_free(a);
}

static void test_names_match_without_case_and_keep_the_asked_case(void **state)
{
    ldns_pkt *a = ask(*state, "Web.DEFAULT.svc.Cluster.Local.", LDNS_RR_TYPE_A);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_owner(rr_at(a, LDNS_SECTION_ANSWER, 0), "Web.DEFAULT.svc.Cluster.Local.");
    ldns_pkt_free(a);
}

static void test_ipv6_and_dual_stack_services(void **state)
{
    ldns_pkt *a = ask(*state, "web6.default.svc.cluster.local.", LDNS_RR_TYPE_AAAA);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0), "fd00::20");
    ldns_pkt_free(a);
    a = ask(*state, "dual.default.svc.cluster.local.", LDNS_RR_TYPE_AAAA);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0), "fd00::21");
    ldns_pkt_free(a);
    a = ask(*state, "dual.default.svc.cluster.local.", LDNS_RR_TYPE_A);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0), "10.96.0.21");
    ldns_pkt_free(a);
    /* an IPv4-only service has no AAAA: NODATA */
    assert_negative(ask(*state, "web.default.svc.cluster.local.", LDNS_RR_TYPE_AAAA),
                    LDNS_RCODE_NOERROR);
}

static void test_headless_service_answers_ready_endpoints(void **state)
{
    ldns_pkt *a = ask(*state, "db.default.svc.cluster.local.", LDNS_RR_TYPE_A);
    assert_int_equal(ldns_pkt_get_rcode(a), LDNS_RCODE_NOERROR);
    assert_int_equal(ldns_pkt_ancount(a), 2); /* db-2 is not ready; db-1's readiness unset */
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0), "10.244.0.5");
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 1), 0), "10.244.0.6");
    ldns_pkt_free(a);
    a = ask(*state, "db-1.db.default.svc.cluster.local.", LDNS_RR_TYPE_A);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0), "10.244.0.6");
    ldns_pkt_free(a);
    /* an endpoint with a hostname is known by it only; a not ready one not at all */
    assert_negative(ask(*state, "10-244-0-6.db.default.svc.cluster.local.", LDNS_RR_TYPE_A),
                    LDNS_RCODE_NXDOMAIN);
    assert_negative(ask(*state, "db-2.db.default.svc.cluster.local.", LDNS_RR_TYPE_A),
                    LDNS_RCODE_NXDOMAIN);
    /* a headless service without endpoints is a name error, as in CoreDNS */
    assert_negative(ask(*state, "lonely.default.svc.cluster.local.", LDNS_RR_TYPE_A),
                    LDNS_RCODE_NXDOMAIN);
}

static void test_endpoint_names_of_a_cluster_ip_service(void **state)
{
    /* without a hostname an endpoint is named by its dashed IP, for any service */
    ldns_pkt *a = ask(*state, "10-244-1-9.web.default.svc.cluster.local.", LDNS_RR_TYPE_A);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0), "10.244.1.9");
    ldns_pkt_free(a);
}

static void test_srv_for_a_named_port(void **state)
{
    ldns_pkt *a = ask(*state, "_http._tcp.web.default.svc.cluster.local.", LDNS_RR_TYPE_SRV);
    assert_int_equal(ldns_pkt_get_rcode(a), LDNS_RCODE_NOERROR);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    const ldns_rr *srv = rr_at(a, LDNS_SECTION_ANSWER, 0);
    assert_owner(srv, "_http._tcp.web.default.svc.cluster.local.");
    assert_string_equal(rdata(srv, 0), "0");
    assert_string_equal(rdata(srv, 1), "100");
    assert_string_equal(rdata(srv, 2), "80");
    assert_string_equal(rdata(srv, 3), "web.default.svc.cluster.local.");
    assert_int_equal(ldns_pkt_arcount(a), 1);
    const ldns_rr *extra = rr_at(a, LDNS_SECTION_ADDITIONAL, 0);
    assert_owner(extra, "web.default.svc.cluster.local.");
    assert_string_equal(rdata(extra, 0), "10.96.0.20");
    ldns_pkt_free(a);
    /* the protocol must match too; an unknown port is a name error */
    assert_negative(ask(*state, "_http._udp.web.default.svc.cluster.local.", LDNS_RR_TYPE_SRV),
                    LDNS_RCODE_NXDOMAIN);
    assert_negative(ask(*state, "_nope._tcp.web.default.svc.cluster.local.", LDNS_RR_TYPE_SRV),
                    LDNS_RCODE_NXDOMAIN);
}

static void test_srv_for_the_service_name_lists_every_port(void **state)
{
    ldns_pkt *a = ask(*state, "web.default.svc.cluster.local.", LDNS_RR_TYPE_SRV);
    assert_int_equal(ldns_pkt_ancount(a), 2);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 1), "50");
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 2), "80");
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 1), 2), "53");
    assert_int_equal(ldns_pkt_arcount(a), 1); /* the address once */
    ldns_pkt_free(a);
}

static void test_srv_of_a_headless_service_names_each_endpoint(void **state)
{
    ldns_pkt *a = ask(*state, "_pg._tcp.db.default.svc.cluster.local.", LDNS_RR_TYPE_SRV);
    assert_int_equal(ldns_pkt_ancount(a), 2);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 3),
                        "db-0.db.default.svc.cluster.local.");
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 1), 3),
                        "db-1.db.default.svc.cluster.local.");
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 2), "5432");
    assert_int_equal(ldns_pkt_arcount(a), 2);
    assert_owner(rr_at(a, LDNS_SECTION_ADDITIONAL, 1), "db-1.db.default.svc.cluster.local.");
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ADDITIONAL, 1), 0), "10.244.0.6");
    ldns_pkt_free(a);
}

static void test_external_name_is_a_cname_resolved_upstream(void **state)
{
    struct fixture *f = *state;
    ldns_pkt *a = ask(f, "ext.default.svc.cluster.local.", LDNS_RR_TYPE_A);
    assert_int_equal(f->lookups, 1);
    assert_int_equal(ldns_pkt_ancount(a), 2);
    const ldns_rr *cname = rr_at(a, LDNS_SECTION_ANSWER, 0);
    assert_int_equal(ldns_rr_get_type(cname), LDNS_RR_TYPE_CNAME);
    assert_string_equal(rdata(cname, 0), "example.org.");
    assert_int_equal(ldns_rr_ttl(cname), 30);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 1), 0), "192.0.2.1");
    ldns_pkt_free(a);
    /* a CNAME question gets the CNAME alone, without asking */
    a = ask(f, "ext.default.svc.cluster.local.", LDNS_RR_TYPE_CNAME);
    assert_int_equal(f->lookups, 1);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0), "example.org.");
    ldns_pkt_free(a);
    /* without a way to ask, the builder defers instead of blocking */
    f->view.lookup = NULL;
    int v;
    struct q q = {.name = "ext.default.svc.cluster.local.", .type = LDNS_RR_TYPE_A};
    assert_null(ask_verdict(f, &q, &v, NULL));
    assert_int_equal(v, CK__DNS_DEFER);
    /* SRV ignores ExternalName services: NODATA */
    assert_negative(ask(f, "ext.default.svc.cluster.local.", LDNS_RR_TYPE_SRV), LDNS_RCODE_NOERROR);
}

static void test_external_name_inside_the_zone_is_followed_here(void **state)
{
    struct fixture *f = *state;
    ldns_pkt *a = ask(f, "inner.default.svc.cluster.local.", LDNS_RR_TYPE_A);
    assert_int_equal(f->lookups, 0);
    assert_int_equal(ldns_pkt_ancount(a), 2);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0),
                        "web.default.svc.cluster.local.");
    assert_owner(rr_at(a, LDNS_SECTION_ANSWER, 1), "web.default.svc.cluster.local.");
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 1), 0), "10.96.0.20");
    ldns_pkt_free(a);
}

static void test_address_records_are_shuffled_as_loadbalance_does(void **state)
{
    struct fixture *f = *state;
    f->view.shuffle = true;
    int first5 = 0, first6 = 0;
    for (int i = 0; i < 64; i++) {
        ldns_pkt *a = ask(f, "db.default.svc.cluster.local.", LDNS_RR_TYPE_A);
        assert_int_equal(ldns_pkt_ancount(a), 2);
        const char *x = rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0);
        const char *y = rdata(rr_at(a, LDNS_SECTION_ANSWER, 1), 0);
        bool five_first = strcmp(x, "10.244.0.5") == 0;
        assert_string_equal(five_first ? y : x, "10.244.0.6"); /* the same two, any order */
        first5 += five_first;
        first6 += !five_first;
        ldns_pkt_free(a);
    }
    assert_true(first5 > 0 && first6 > 0);
    /* a mixed section keeps its CNAME first */
    ldns_pkt *a = ask(f, "inner.default.svc.cluster.local.", LDNS_RR_TYPE_A);
    assert_int_equal(ldns_rr_get_type(rr_at(a, LDNS_SECTION_ANSWER, 0)), LDNS_RR_TYPE_CNAME);
    ldns_pkt_free(a);
}

/* ---- pods, reverse, apex -------------------------------------------------- */

static void test_pod_names_in_insecure_mode(void **state)
{
    ldns_pkt *a = ask(*state, "10-1-2-3.default.pod.cluster.local.", LDNS_RR_TYPE_A);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0), "10.1.2.3");
    ldns_pkt_free(a);
    a = ask(*state, "fd00--5.default.pod.cluster.local.", LDNS_RR_TYPE_AAAA);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0), "fd00::5");
    ldns_pkt_free(a);
    assert_negative(ask(*state, "10-1-2.default.pod.cluster.local.", LDNS_RR_TYPE_A),
                    LDNS_RCODE_NXDOMAIN);
    assert_negative(ask(*state, "10-1-2-3.nowhere.pod.cluster.local.", LDNS_RR_TYPE_A),
                    LDNS_RCODE_NXDOMAIN);
    assert_negative(ask(*state, "10-1-2-3.default.pod.cluster.local.", LDNS_RR_TYPE_AAAA),
                    LDNS_RCODE_NOERROR);
}

static void test_ptr_of_cluster_ips_and_endpoints(void **state)
{
    struct fixture *f = *state;
    ldns_pkt *a = ask(f, "20.0.96.10.in-addr.arpa.", LDNS_RR_TYPE_PTR);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_true(ldns_pkt_aa(a));
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0),
                        "web.default.svc.cluster.local.");
    ldns_pkt_free(a);
    a = ask(f, "5.0.244.10.in-addr.arpa.", LDNS_RR_TYPE_PTR);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0),
                        "db-0.db.default.svc.cluster.local.");
    ldns_pkt_free(a);
    a = ask(f, "0.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.",
            LDNS_RR_TYPE_PTR);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0),
                        "web6.default.svc.cluster.local.");
    ldns_pkt_free(a);
    /* an address outside the cluster, or another type, goes upstream (fallthrough) */
    int v;
    struct q q = {.name = "9.9.9.9.in-addr.arpa.", .type = LDNS_RR_TYPE_PTR};
    assert_null(ask_verdict(f, &q, &v, NULL));
    assert_int_equal(v, CK__DNS_FORWARD);
    q = (struct q){.name = "7.0.244.10.in-addr.arpa.", .type = LDNS_RR_TYPE_PTR}; /* not ready */
    assert_null(ask_verdict(f, &q, &v, NULL));
    assert_int_equal(v, CK__DNS_FORWARD);
    q = (struct q){.name = "20.0.96.10.in-addr.arpa.", .type = LDNS_RR_TYPE_TXT};
    assert_null(ask_verdict(f, &q, &v, NULL));
    assert_int_equal(v, CK__DNS_FORWARD);
}

static void test_nxdomain_and_nodata_where_coredns_gives_them(void **state)
{
    struct fixture *f = *state;
    assert_negative(ask(f, "nope.default.svc.cluster.local.", LDNS_RR_TYPE_A), LDNS_RCODE_NXDOMAIN);
    assert_negative(ask(f, "web.nowhere.svc.cluster.local.", LDNS_RR_TYPE_A), LDNS_RCODE_NXDOMAIN);
    assert_negative(ask(f, "nowhere.svc.cluster.local.", LDNS_RR_TYPE_A), LDNS_RCODE_NXDOMAIN);
    assert_negative(ask(f, "quiet.svc.cluster.local.", LDNS_RR_TYPE_A), LDNS_RCODE_NOERROR);
    assert_negative(ask(f, "svc.cluster.local.", LDNS_RR_TYPE_A), LDNS_RCODE_NOERROR);
    assert_negative(ask(f, "cluster.local.", LDNS_RR_TYPE_A), LDNS_RCODE_NOERROR);
    assert_negative(ask(f, "foo.cluster.local.", LDNS_RR_TYPE_A), LDNS_RCODE_NXDOMAIN);
    assert_negative(ask(f, "a.b.c.web.default.svc.cluster.local.", LDNS_RR_TYPE_A),
                    LDNS_RCODE_NXDOMAIN);
    assert_negative(ask(f, "web.default.svc.cluster.local.", LDNS_RR_TYPE_MX), LDNS_RCODE_NOERROR);
    assert_negative(ask(f, "nope.default.svc.cluster.local.", LDNS_RR_TYPE_MX),
                    LDNS_RCODE_NXDOMAIN);
    assert_negative(ask(f, "web.default.svc.cluster.local.", LDNS_RR_TYPE_CAA), LDNS_RCODE_NOERROR);
    assert_negative(ask(f, "nope.default.svc.cluster.local.", LDNS_RR_TYPE_CAA),
                    LDNS_RCODE_NXDOMAIN);
    /* SOA below the apex is NODATA even for a name that does not exist (CoreDNS) */
    assert_negative(ask(f, "nope.default.svc.cluster.local.", LDNS_RR_TYPE_SOA),
                    LDNS_RCODE_NOERROR);
    /* TXT: NODATA where the name has records, else a name error */
    assert_negative(ask(f, "web.default.svc.cluster.local.", LDNS_RR_TYPE_TXT), LDNS_RCODE_NOERROR);
    assert_negative(ask(f, "quiet.svc.cluster.local.", LDNS_RR_TYPE_TXT), LDNS_RCODE_NXDOMAIN);
    /* before the caches synced, a name error is SERVFAIL */
    f->view.synced = false;
    assert_negative(ask(f, "nope.default.svc.cluster.local.", LDNS_RR_TYPE_A), LDNS_RCODE_SERVFAIL);
}

static void test_apex_soa_ns_and_dns_names(void **state)
{
    struct fixture *f = *state;
    ldns_pkt *a = ask(f, "cluster.local.", LDNS_RR_TYPE_SOA);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    const ldns_rr *soa = rr_at(a, LDNS_SECTION_ANSWER, 0);
    assert_int_equal(ldns_rr_get_type(soa), LDNS_RR_TYPE_SOA);
    assert_string_equal(rdata(soa, 0), "ns.dns.cluster.local.");
    assert_int_equal(ldns_rdf2native_int32(ldns_rr_rdf(soa, 3)), 7200);
    assert_int_equal(ldns_rdf2native_int32(ldns_rr_rdf(soa, 4)), 1800);
    assert_int_equal(ldns_rdf2native_int32(ldns_rr_rdf(soa, 5)), 86400);
    ldns_pkt_free(a);
    /* NS: the service whose cluster IP the server answers on, its address as extra */
    a = ask(f, "cluster.local.", LDNS_RR_TYPE_NS);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0),
                        "kube-dns.kube-system.svc.cluster.local.");
    assert_int_equal(ldns_pkt_arcount(a), 1);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ADDITIONAL, 0), 0), "10.96.0.10");
    ldns_pkt_free(a);
    a = ask(f, "ns.dns.cluster.local.", LDNS_RR_TYPE_A);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0), "10.96.0.10");
    ldns_pkt_free(a);
    /* without a service on that address, the name server is ns.dns.<zone> */
    f->view.local_ips[0] = "127.0.0.1";
    a = ask(f, "cluster.local.", LDNS_RR_TYPE_NS);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0), "ns.dns.cluster.local.");
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ADDITIONAL, 0), 0), "127.0.0.1");
    ldns_pkt_free(a);
    a = ask(f, "dns-version.cluster.local.", LDNS_RR_TYPE_TXT);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    assert_string_equal(rdata(rr_at(a, LDNS_SECTION_ANSWER, 0), 0), "\"1.1.0\"");
    assert_int_equal(ldns_rr_ttl(rr_at(a, LDNS_SECTION_ANSWER, 0)), 28800);
    ldns_pkt_free(a);
    a = ask(f, "cluster.local.", LDNS_RR_TYPE_AXFR);
    assert_int_equal(ldns_pkt_get_rcode(a), LDNS_RCODE_REFUSED);
    assert_int_equal(ldns_pkt_ancount(a) + ldns_pkt_nscount(a), 0);
    ldns_pkt_free(a);
}

static void test_names_outside_the_zones_are_forwarded(void **state)
{
    int v;
    struct q q = {.name = "example.com.", .type = LDNS_RR_TYPE_A};
    assert_null(ask_verdict(*state, &q, &v, NULL));
    assert_int_equal(v, CK__DNS_FORWARD);
    q.name = "local."; /* above the cluster domain */
    assert_null(ask_verdict(*state, &q, &v, NULL));
    assert_int_equal(v, CK__DNS_FORWARD);
}

/* ---- EDNS0, truncation, malformed queries --------------------------------- */

static void test_edns_opt_answered_with_the_clients_size(void **state)
{
    int v;
    struct q q = {.name = "web.default.svc.cluster.local.", .type = LDNS_RR_TYPE_A, .edns = 1232};
    ldns_pkt *a = ask_verdict(*state, &q, &v, NULL);
    assert_true(ldns_pkt_edns(a));
    assert_int_equal(ldns_pkt_edns_udp_size(a), 1232);
    assert_int_equal(ldns_pkt_edns_version(a), 0);
    ldns_pkt_free(a);
    q.edns_version = 1;
    a = ask_verdict(*state, &q, &v, NULL);
    assert_int_equal(ldns_pkt_edns_extended_rcode(a), 1); /* BADVERS (16) */
    assert_int_equal(ldns_pkt_edns_version(a), 0);
    assert_int_equal(ldns_pkt_ancount(a), 0);
    ldns_pkt_free(a);
}

static void test_large_answers_are_truncated_to_the_clients_size(void **state)
{
    struct fixture *f = *state;
    json_t *eps = json_array();
    for (int i = 0; i < 100; i++) {
        char ip[32];
        snprintf(ip, sizeof(ip), "10.250.%d.%d", i / 250, i % 250 + 1);
        json_array_append_new(eps, endpoint(ip, NULL, 1));
    }
    add(f->services, service("default", "big", "ClusterIP", json_pack("[s]", "None"), NULL));
    add(f->slices, slice("default", "big-1", "big", json_array(), eps));
    int v;
    size_t size = 0;
    struct q q = {.name = "big.default.svc.cluster.local.", .type = LDNS_RR_TYPE_A};
    ldns_pkt *a = ask_verdict(f, &q, &v, &size);
    assert_true(ldns_pkt_tc(a));
    assert_true(size <= 512);
    assert_true(ldns_pkt_ancount(a) > 0 && ldns_pkt_ancount(a) < 100);
    ldns_pkt_free(a);
    q.edns = 4096;
    a = ask_verdict(f, &q, &v, &size);
    assert_false(ldns_pkt_tc(a));
    assert_int_equal(ldns_pkt_ancount(a), 100);
    assert_true(ldns_pkt_edns(a)); /* the OPT survives */
    ldns_pkt_free(a);
    q.edns = 0;
    q.tcp = true;
    a = ask_verdict(f, &q, &v, &size);
    assert_false(ldns_pkt_tc(a));
    assert_int_equal(ldns_pkt_ancount(a), 100);
    assert_true(size > 512);
    ldns_pkt_free(a);
}

static int handle_pkt(struct fixture *f, ldns_pkt *p, size_t cut, ldns_pkt **ret_answer)
{
    uint8_t *w = NULL, *out = NULL;
    size_t len = 0, out_len = 0;
    assert_int_equal(ldns_pkt2wire(&w, p, &len), LDNS_STATUS_OK);
    ldns_pkt_free(p);
    int v = ck__dns_handle(&f->view, w, cut ? cut : len, false, &out, &out_len);
    free(w);
    *ret_answer = NULL;
    if (v == CK__DNS_ANSWER) {
        assert_int_equal(ldns_wire2pkt(ret_answer, out, out_len), LDNS_STATUS_OK);
        free(out);
    }
    return v;
}

static ldns_pkt *plain_query(const char *name)
{
    ldns_pkt *p = NULL;
    assert_int_equal(ldns_pkt_query_new_frm_str(&p, name, LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, 0),
                     LDNS_STATUS_OK);
    ldns_pkt_set_id(p, 77);
    return p;
}

static void test_malformed_queries_get_formerr_or_nothing(void **state)
{
    struct fixture *f = *state;
    ldns_pkt *a;
    /* cut inside the question: FORMERR, with the ID */
    assert_int_equal(handle_pkt(f, plain_query("web.default.svc.cluster.local."), 20, &a),
                     CK__DNS_ANSWER);
    assert_int_equal(ldns_pkt_get_rcode(a), LDNS_RCODE_FORMERR);
    assert_int_equal(ldns_pkt_id(a), 77);
    assert_true(ldns_pkt_qr(a));
    ldns_pkt_free(a);
    /* less than a header: nothing */
    assert_int_equal(handle_pkt(f, plain_query("x."), 11, &a), CK__DNS_DROP);
    /* a response is never answered */
    ldns_pkt *p = plain_query("web.default.svc.cluster.local.");
    ldns_pkt_set_qr(p, true);
    assert_int_equal(handle_pkt(f, p, 0, &a), CK__DNS_DROP);
    /* two questions: FORMERR */
    p = plain_query("web.default.svc.cluster.local.");
    ldns_rr *q2 = NULL;
    assert_int_equal(
        ldns_rr_new_question_frm_str(&q2, "db.default.svc.cluster.local. IN A", NULL, NULL),
        LDNS_STATUS_OK);
    ldns_pkt_push_rr(p, LDNS_SECTION_QUESTION, q2);
    assert_int_equal(handle_pkt(f, p, 0, &a), CK__DNS_ANSWER);
    assert_int_equal(ldns_pkt_get_rcode(a), LDNS_RCODE_FORMERR);
    ldns_pkt_free(a);
    /* an UPDATE: NOTIMP, with its opcode */
    p = plain_query("cluster.local.");
    ldns_pkt_set_opcode(p, LDNS_PACKET_UPDATE);
    assert_int_equal(handle_pkt(f, p, 0, &a), CK__DNS_ANSWER);
    assert_int_equal(ldns_pkt_get_rcode(a), LDNS_RCODE_NOTIMPL);
    assert_int_equal(ldns_pkt_get_opcode(a), LDNS_PACKET_UPDATE);
    ldns_pkt_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(test_cluster_ip_service_is_its_a_record),
        T(test_names_match_without_case_and_keep_the_asked_case),
        T(test_ipv6_and_dual_stack_services),
        T(test_headless_service_answers_ready_endpoints),
        T(test_endpoint_names_of_a_cluster_ip_service),
        T(test_srv_for_a_named_port),
        T(test_srv_for_the_service_name_lists_every_port),
        T(test_srv_of_a_headless_service_names_each_endpoint),
        T(test_external_name_is_a_cname_resolved_upstream),
        T(test_external_name_inside_the_zone_is_followed_here),
        T(test_address_records_are_shuffled_as_loadbalance_does),
        T(test_pod_names_in_insecure_mode),
        T(test_ptr_of_cluster_ips_and_endpoints),
        T(test_nxdomain_and_nodata_where_coredns_gives_them),
        T(test_apex_soa_ns_and_dns_names),
        T(test_names_outside_the_zones_are_forwarded),
        T(test_edns_opt_answered_with_the_clients_size),
        T(test_large_answers_are_truncated_to_the_clients_size),
        T(test_malformed_queries_get_formerr_or_nothing),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
