/*
 * networkpolicy.c - the NetworkPolicy kind (networking.k8s.io/v1): which
 * traffic the selected pods may receive and send.
 *
 * Mirrors Kubernetes' pkg/registry/networking/networkpolicy/strategy.go,
 * pkg/apis/networking/v1/defaults.go and ValidateNetworkPolicySpec in
 * pkg/apis/networking/validation: a generation counts spec changes; a port's
 * protocol defaults to TCP (the schema) and policyTypes to Ingress, plus
 * Egress when there are egress rules; ports are 1-65535 or names, endPort only
 * after a numeric port and not below it; a peer is a pod selector, a
 * namespace selector (or both), or an ipBlock alone, whose except entries are
 * strict subsets of its cidr; at most two policyTypes, Ingress or Egress.
 * `ckube proxy --network-policy` enforces them (lib/proxy/netpol.c,
 * docs/internals/proxy.md). The printer shows NAME, POD-SELECTOR and AGE.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_networking.c and tests/e2e/test_kinds.sh.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"

#define CIDR_DETAIL "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"

static int defaults(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec) || json_array_size(json_object_get(spec, "policyTypes")) > 0)
        return 0;
    json_t *types = json_array();
    if (!types || json_array_append_new(types, json_string("Ingress")) < 0 ||
        (json_array_size(json_object_get(spec, "egress")) > 0 &&
         json_array_append_new(types, json_string("Egress")) < 0)) {
        json_decref(types);
        return CK_ENOMEM;
    }
    return json_object_set_new(spec, "policyTypes", types) < 0 ? CK_ENOMEM : 0;
}

static void validate_selector(const json_t *selector, const char *path,
                              struct ck_field_errors *errs)
{
    struct ck_label_selector *sel = NULL;
    struct ck_err err = {0};
    if (ck_label_selector_from_object(selector, &sel, &err) < 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, NULL, false, "%s", err.msg);
    ck_label_selector_free(sel);
}

static void validate_port(const json_t *p, const char *at, struct ck_field_errors *errs)
{
    char f[160], v[32]; /* at is a rule's path (< 96) */
    const char *protocol = ck__str_at(p, "protocol");
    const json_t *port = json_object_get(p, "port");
    const json_t *end = json_object_get(p, "endPort");
    long long e = json_integer_value(end);
    if (protocol && strcmp(protocol, "TCP") != 0 && strcmp(protocol, "UDP") != 0 &&
        strcmp(protocol, "SCTP") != 0) {
        snprintf(f, sizeof(f), "%s.protocol", at);
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, f, protocol, true,
                            "supported values: \"TCP\", \"UDP\", \"SCTP\"");
    }
    snprintf(v, sizeof(v), "%lld", e);
    if (json_is_integer(port)) {
        long long n = json_integer_value(port);
        if (n < 1 || n > 65535) {
            char pv[32];
            snprintf(f, sizeof(f), "%s.port", at);
            snprintf(pv, sizeof(pv), "%lld", n);
            ck_field_errors_add(errs, CK_FIELD_INVALID, f, pv, false,
                                "must be between 1 and 65535, inclusive");
        }
        if (end) {
            snprintf(f, sizeof(f), "%s.endPort", at);
            if (e < n)
                ck_field_errors_add(errs, CK_FIELD_INVALID, f, v, false,
                                    "must be greater than or equal to `port`");
            if (e < 1 || e > 65535)
                ck_field_errors_add(errs, CK_FIELD_INVALID, f, v, false,
                                    "must be between 1 and 65535, inclusive");
        }
    } else if (json_is_string(port)) {
        snprintf(f, sizeof(f), "%s.endPort", at);
        if (end)
            ck_field_errors_add(errs, CK_FIELD_INVALID, f, v, false,
                                "may not be specified when `port` is non-numeric");
        snprintf(f, sizeof(f), "%s.port", at);
        ck__validate_port_name(json_string_value(port), f, errs);
    } else if (end) {
        snprintf(f, sizeof(f), "%s.endPort", at);
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, v, false,
                            "may not be specified when `port` is not specified");
    }
}

/* Parses a CIDR into family, address bytes and prefix length; false when it is none. */
static bool parse_cidr(const char *text, int *ret_family, unsigned char addr[16], int *ret_bits)
{
    char ip[64];
    const char *slash = strchr(text, '/');
    if (!slash || (size_t)(slash - text) >= sizeof(ip) || !slash[1])
        return false;
    memcpy(ip, text, (size_t)(slash - text));
    ip[slash - text] = 0;
    char *end;
    long bits = strtol(slash + 1, &end, 10);
    if (*end)
        return false;
    if (inet_pton(AF_INET, ip, addr) == 1 && bits >= 0 && bits <= 32)
        *ret_family = AF_INET;
    else if (inet_pton(AF_INET6, ip, addr) == 1 && bits >= 0 && bits <= 128)
        *ret_family = AF_INET6;
    else
        return false;
    *ret_bits = (int)bits;
    return true;
}

/* True when the first bits of a and b agree. */
static bool same_prefix(const unsigned char *a, const unsigned char *b, int bits)
{
    for (int i = 0; i < bits; i++) {
        int mask = 0x80 >> (i % 8);
        if ((a[i / 8] & mask) != (b[i / 8] & mask))
            return false;
    }
    return true;
}

static void validate_ip_block(const json_t *block, const char *at, struct ck_field_errors *errs)
{
    char f[224]; /* at is a peer's path (< 160) */
    const char *cidr = ck__str_at(block, "cidr");
    snprintf(f, sizeof(f), "%s.cidr", at);
    if (!cidr || !*cidr) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
        return;
    }
    int family, bits;
    unsigned char addr[16];
    if (!parse_cidr(cidr, &family, addr, &bits)) {
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, cidr, true, CIDR_DETAIL);
        return;
    }
    size_t i;
    const json_t *x;
    json_array_foreach(json_object_get(block, "except"), i, x)
    {
        snprintf(f, sizeof(f), "%s.except[%zu]", at, i);
        const char *text = json_string_value(x);
        int xfamily, xbits;
        unsigned char xaddr[16];
        if (!text || !parse_cidr(text, &xfamily, xaddr, &xbits)) {
            ck_field_errors_add(errs, CK_FIELD_INVALID, f, text ? text : "", true, CIDR_DETAIL);
            continue;
        }
        if (xfamily != family || xbits <= bits || !same_prefix(addr, xaddr, bits))
            ck_field_errors_add(errs, CK_FIELD_INVALID, f, text, true,
                                "must be a strict subset of `cidr`");
    }
}

static void validate_peer(const json_t *peer, const char *at, struct ck_field_errors *errs)
{
    char f[160]; /* at is a rule's path (< 96) */
    int n = 0;
    const json_t *pods = json_object_get(peer, "podSelector");
    const json_t *namespaces = json_object_get(peer, "namespaceSelector");
    const json_t *block = json_object_get(peer, "ipBlock");
    if (pods) {
        n++;
        snprintf(f, sizeof(f), "%s.podSelector", at);
        validate_selector(pods, f, errs);
    }
    if (namespaces) {
        n++;
        snprintf(f, sizeof(f), "%s.namespaceSelector", at);
        validate_selector(namespaces, f, errs);
    }
    if (block) {
        n++;
        snprintf(f, sizeof(f), "%s.ipBlock", at);
        validate_ip_block(block, f, errs);
    }
    if (n == 0)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, at, NULL, false, "must specify a peer");
    else if (n > 1 && block)
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, at, NULL, false,
                            "may not specify both ipBlock and another peer");
}

static void validate_rules(const json_t *rules, const char *name, const char *peers,
                           struct ck_field_errors *errs)
{
    size_t i, j;
    const json_t *rule, *x;
    char f[96]; /* "spec.<ingress|egress>[i].<from|to|ports>[j]" */
    json_array_foreach(rules, i, rule)
    {
        json_array_foreach(json_object_get(rule, "ports"), j, x)
        {
            snprintf(f, sizeof(f), "spec.%s[%zu].ports[%zu]", name, i, j);
            validate_port(x, f, errs);
        }
        json_array_foreach(json_object_get(rule, peers), j, x)
        {
            snprintf(f, sizeof(f), "spec.%s[%zu].%s[%zu]", name, i, peers, j);
            validate_peer(x, f, errs);
        }
    }
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    const json_t *spec = json_object_get(obj, "spec");
    validate_selector(json_object_get(spec, "podSelector"), "spec.podSelector", errs);
    validate_rules(json_object_get(spec, "ingress"), "ingress", "from", errs);
    validate_rules(json_object_get(spec, "egress"), "egress", "to", errs);
    const json_t *types = json_object_get(spec, "policyTypes");
    if (json_array_size(types) > 2) {
        char *text = json_dumps(types, JSON_COMPACT);
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.policyTypes", text ? text : "", false,
                            "may not specify more than two policyTypes");
        free(text);
        return;
    }
    size_t i;
    const json_t *t;
    json_array_foreach(types, i, t)
    {
        const char *s = json_string_value(t);
        if (s && (strcmp(s, "Ingress") == 0 || strcmp(s, "Egress") == 0))
            continue;
        char f[64];
        snprintf(f, sizeof(f), "spec.policyTypes[%zu]", i);
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, f, s ? s : "", true,
                            "supported values: \"Ingress\", \"Egress\"");
    }
}

enum {
    COL_NAME,
    COL_POD_SELECTOR,
    COL_AGE,
};

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    struct ck_label_selector *sel = NULL;
    struct ck_err err = {0};
    char *text = NULL;
    if (ck_label_selector_from_object(ck__json_path(obj, "spec.podSelector"), &sel, &err) == 0)
        text = ck_label_selector_string(sel);
    cells[COL_POD_SELECTOR] = json_string(text && *text ? text : "<none>");
    free(text);
    ck_label_selector_free(sel);
}

static const char *const short_names[] = {"netpol", NULL};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_POD_SELECTOR] =
        CK__COMPUTED_COLUMN("Pod-Selector", "string",
                            "Selects the pods to which this NetworkPolicy object applies.", 0),
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_networkpolicy = {
    .group = "networking.k8s.io",
    .version = "v1",
    .kind = "NetworkPolicy",
    .list_kind = "NetworkPolicyList",
    .resource = "networkpolicies",
    .singular = "networkpolicy",
    .short_names = short_names,
    .namespaced = true,
    .has_generation = true,
    .schema = "io.k8s.api.networking.v1.NetworkPolicy",
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .defaults = defaults,
    .validate = validate,
};
