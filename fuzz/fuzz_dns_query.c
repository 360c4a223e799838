/*
 * fuzz_dns_query.c - libFuzzer target for the cluster DNS server's answer builder
 * (lib/dns/answer.c): the input is a query as a client sends it, over UDP and then over
 * TCP, against a fixed set of objects (a ClusterIP, a dual-stack, a headless and two
 * ExternalName Services, an EndpointSlice with hostnames, two namespaces) and an upstream
 * that answers nothing. Whatever arrives must be answered, forwarded or dropped without
 * reading past its end or leaking. Checked beyond that: an answer parses with ldns, is a
 * response with the query's ID, and over UDP fits the client's size (512 bytes, or its
 * EDNS0 buffer).
 */
#include <jansson.h>
#include <ldns/ldns.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ckube/client.h"
#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ck_indexer *services, *slices, *namespaces;

static void add(struct ck_indexer *ix, json_t *obj)
{
    if (!obj || ck_indexer_add(ix, obj, NULL) < 0)
        abort();
    json_decref(obj);
}

static void setup(void)
{
    if (ck_indexer_new(&services, NULL) < 0 || ck_indexer_new(&slices, NULL) < 0 ||
        ck_indexer_new(&namespaces, NULL) < 0 || ck__dns_add_indices(services, slices, NULL) < 0)
        abort();
    add(namespaces, json_pack("{s:{s:s}}", "metadata", "name", "default"));
    add(namespaces, json_pack("{s:{s:s}}", "metadata", "name", "kube-system"));
    add(services,
        json_pack("{s:{s:s, s:s}, s:{s:s, s:[s], s:[{s:s, s:s, s:i}]}}", "metadata", "namespace",
                  "default", "name", "web", "spec", "type", "ClusterIP", "clusterIPs", "10.96.0.20",
                  "ports", "name", "http", "protocol", "TCP", "port", 80));
    add(services,
        json_pack("{s:{s:s, s:s}, s:{s:s, s:[s, s], s:[{s:s, s:i}]}}", "metadata", "namespace",
                  "kube-system", "name", "kube-dns", "spec", "type", "ClusterIP", "clusterIPs",
                  "10.96.0.10", "fd00::10", "ports", "name", "dns", "port", 53));
    add(services, json_pack("{s:{s:s, s:s}, s:{s:s, s:s, s:[{s:s, s:i}]}}", "metadata", "namespace",
                            "default", "name", "db", "spec", "type", "ClusterIP", "clusterIP",
                            "None", "ports", "name", "pg", "port", 5432));
    add(services,
        json_pack("{s:{s:s, s:s}, s:{s:s, s:s}}", "metadata", "namespace", "default", "name", "ext",
                  "spec", "type", "ExternalName", "externalName", "example.com"));
    add(services, json_pack("{s:{s:s, s:s}, s:{s:s, s:s}}", "metadata", "namespace", "default",
                            "name", "loop", "spec", "type", "ExternalName", "externalName",
                            "loop.default.svc.cluster.local"));
    add(slices,
        json_pack("{s:{s:s, s:s, s:{s:s}}, s:[{s:s, s:s, s:i}], s:[{s:[s], s:s}, {s:[s], "
                  "s:{s:b}}, {s:[s]}]}",
                  "metadata", "namespace", "default", "name", "db-1", "labels",
                  "kubernetes.io/service-name", "db", "ports", "name", "pg", "protocol", "TCP",
                  "port", 5432, "endpoints", "addresses", "10.244.0.5", "hostname", "db-0",
                  "addresses", "10.244.0.6", "conditions", "ready", 0, "addresses", "fd00::7"));
}

static ldns_pkt *no_upstream(void *arg, const ldns_rdf *name, ldns_rr_type type)
{
    (void)arg;
    (void)name;
    (void)type;
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!services)
        setup();
    struct ck__dns_view view = {
        .services = services,
        .slices = slices,
        .namespaces = namespaces,
        .zone = "cluster.local.",
        .ttl = 30,
        .serial = 1,
        .synced = true,
        .shuffle = true,
        .local_ips = {"10.96.0.10"},
        .n_local_ips = 1,
        .lookup = no_upstream,
    };
    for (int tcp = 0; tcp < 2; tcp++) {
        uint8_t *out = NULL;
        size_t len = 0;
        int v = ck__dns_handle(&view, data, size, tcp == 1, &out, &len);
        if (v != CK__DNS_ANSWER)
            continue;
        ldns_pkt *a = NULL, *q = NULL;
        if (ldns_wire2pkt(&a, out, len) != LDNS_STATUS_OK || !ldns_pkt_qr(a) ||
            ldns_pkt_id(a) != LDNS_ID_WIRE(data))
            abort();
        if (!tcp && ldns_wire2pkt(&q, data, size) == LDNS_STATUS_OK &&
            len > ck__dns_max_size(q, false))
            abort();
        ldns_pkt_free(q);
        ldns_pkt_free(a);
        free(out);
    }
    return 0;
}
