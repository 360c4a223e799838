/*
 * allocator.c - cluster IPs and node ports for Services, kept in the store.
 *
 * Kubernetes allocates a Service's cluster IP from --service-cluster-ip-range
 * (default 10.96.0.0/12) and its node ports from --service-node-port-range
 * (30000-32767) before the Service is stored, and gives each one out once.
 * Here every allocated value is one key of the store,
 * /registry/ranges/serviceips/<ip> and /registry/ranges/servicenodeports/<port>,
 * whose value names the owner (namespace, name, uid). Taking a value is a
 * create-if-absent of its key: a compare-and-swap in the store, so two
 * requests, or two API servers on one etcd, never get the same value, and a
 * restart finds every value still taken. This is the shape of Kubernetes'
 * newer allocator (one IPAddress object per IP) rather than of its bitmap in
 * one key; the answers are the same.
 *
 * A dynamic cluster IP is picked at random from the upper band of the range,
 * the lower band (1/16 of it, 16 to 256 addresses) being left for IPs users
 * ask for, and from the lower band only when the upper is full (KEP-3070).
 * The network and broadcast addresses are never given; the first address
 * goes to the `kubernetes` Service. A dynamic node port is random, then the
 * next free one.
 *
 * Life cycle: a create takes what the Service needs before it is stored and
 * gives it back if the create fails; an update takes what the new state adds
 * and, once committed, gives back what it dropped (or, when the commit
 * fails, what it took); the removal of a Service gives back all of its. A
 * value is given back by a delete conditional on the owner it holds, so a
 * value already given to someone else is never freed. A server that dies
 * between taking a value and storing the Service leaves the value taken
 * (Kubernetes' repair loop would free it; docs/differences.md).
 *
 * Dry runs take nothing: they check that a requested value is free and pick
 * a free one to show.
 *
 * Threading: an allocator is immutable after creation; every call may run
 * on any request thread, the store doing the arbitration.
 *
 * Tests: tests/apiserver/test_allocator.c (ranges, uniqueness under
 * concurrent creates, two servers on one store, restarts, release), the
 * kubectl e2e test of the kinds (tests/e2e/test_kubectl_kinds.sh).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define IP_PREFIX   "/registry/ranges/serviceips/"
#define PORT_PREFIX "/registry/ranges/servicenodeports/"
/* What a search returns when every value is taken. */
#define RANGE_FULL 1
/* Random tries before a scan for a free value. */
#define RANDOM_TRIES 32

struct ck__allocator {
    struct ck_store *store;
    uint32_t network; /* host order */
    uint32_t size;    /* addresses in the range, network and broadcast included */
    char cidr[48];
    int port_base;
    int port_size;
};

static uint32_t random_below(uint32_t n)
{
    uint32_t r = 0;
    if (getrandom(&r, sizeof(r), 0) != sizeof(r))
        r = (uint32_t)rand();
    return n ? r % n : 0;
}

int ck__allocator_new(struct ck_store *store, const char *cidr, const char *port_range,
                      struct ck__allocator **ret, struct ck_err *reterr)
{
    char addr[48];
    unsigned bits = 0;
    struct in_addr in;
    const char *slash = cidr ? strchr(cidr, '/') : NULL;
    if (!slash || (size_t)(slash - cidr) >= sizeof(addr) || sscanf(slash + 1, "%u", &bits) != 1 ||
        bits > 30 || bits < 8)
        return ck_err_set(reterr, CK_EINVAL,
                          "--service-cluster-ip-range %s: want an IPv4 CIDR from /8 to /30",
                          cidr ? cidr : "");
    memcpy(addr, cidr, (size_t)(slash - cidr));
    addr[slash - cidr] = '\0';
    if (inet_pton(AF_INET, addr, &in) != 1)
        return ck_err_set(reterr, CK_EINVAL,
                          "--service-cluster-ip-range %s: want an IPv4 CIDR from /8 to /30", cidr);
    int low = 0, high = 0;
    char extra;
    if (!port_range || sscanf(port_range, "%d-%d%c", &low, &high, &extra) != 2 || low < 1 ||
        high > 65535 || high < low)
        return ck_err_set(reterr, CK_EINVAL,
                          "--service-node-port-range %s: want FIRST-LAST within 1-65535",
                          port_range ? port_range : "");
    struct ck__allocator *a = ck__calloc(1, sizeof(*a));
    if (!a)
        return ck_err_no_memory(reterr);
    uint32_t mask = bits == 0 ? 0 : 0xffffffffu << (32 - bits);
    a->store = store;
    a->network = ntohl(in.s_addr) & mask;
    a->size = (uint32_t)1 << (32 - bits);
    struct in_addr net = {htonl(a->network)};
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &net, text, sizeof(text));
    snprintf(a->cidr, sizeof(a->cidr), "%s/%u", text, bits);
    a->port_base = low;
    a->port_size = high - low + 1;
    *ret = a;
    return 0;
}

struct ck__allocator *ck__allocator_free(struct ck__allocator *a)
{
    free(a);
    return NULL;
}

static void ip_text(uint32_t ip, char *buf, size_t size)
{
    struct in_addr in = {htonl(ip)};
    inet_ntop(AF_INET, &in, buf, (socklen_t)size);
}

const char *ck__allocator_first_ip(const struct ck__allocator *a, char *buf, size_t size)
{
    ip_text(a->network + 1, buf, size);
    return buf;
}

/* The owner record a key holds; the same bytes for the same object, so a release can compare. */
static char *owner_value(const json_t *obj, size_t *ret_len)
{
    json_t *owner = json_pack("{s:s?, s:s?, s:s?}", "namespace", ck__meta_str(obj, "namespace"),
                              "name", ck__meta_str(obj, "name"), "uid", ck__meta_str(obj, "uid"));
    char *text = owner ? ck__json_dumps(owner, JSON_COMPACT | JSON_SORT_KEYS, ret_len) : NULL;
    json_decref(owner);
    return text;
}

/* ---- what a service holds -------------------------------------------------- */

static const char *service_type(const json_t *service)
{
    const char *type = json_string_value(json_object_get(json_object_get(service, "spec"), "type"));
    return type && *type ? type : "ClusterIP";
}

/* NodePort, and LoadBalancer unless allocateLoadBalancerNodePorts is false. */
static bool needs_node_ports(const json_t *service)
{
    const char *type = service_type(service);
    const json_t *allocate =
        json_object_get(json_object_get(service, "spec"), "allocateLoadBalancerNodePorts");
    return strcmp(type, "NodePort") == 0 ||
           (strcmp(type, "LoadBalancer") == 0 && !json_is_false(allocate));
}

/* Every type but ExternalName, unless headless (clusterIP None). */
static bool needs_cluster_ip(const json_t *service)
{
    const char *ip =
        json_string_value(json_object_get(json_object_get(service, "spec"), "clusterIP"));
    return strcmp(service_type(service), "ExternalName") != 0 && !(ip && strcmp(ip, "None") == 0);
}

static bool parse_ip(const char *text, uint32_t *ret)
{
    struct in_addr in;
    if (!text || inet_pton(AF_INET, text, &in) != 1)
        return false;
    *ret = ntohl(in.s_addr);
    return true;
}

static bool holds_port(const struct ck__allocated *h, int port)
{
    for (size_t i = 0; i < h->n_ports; i++)
        if (h->ports[i] == port)
            return true;
    return false;
}

/* What obj, as stored, holds. */
static void held_by(const json_t *obj, struct ck__allocated *h)
{
    memset(h, 0, sizeof(*h));
    if (!obj)
        return;
    if (needs_cluster_ip(obj))
        parse_ip(json_string_value(json_object_get(json_object_get(obj, "spec"), "clusterIP")),
                 &h->ip);
    if (!needs_node_ports(obj))
        return;
    size_t i;
    const json_t *port;
    json_array_foreach(json_object_get(json_object_get(obj, "spec"), "ports"), i, port)
    {
        int n = (int)json_integer_value(json_object_get(port, "nodePort"));
        if (n > 0 && !holds_port(h, n) && h->n_ports < CK__ALLOCATION_MAX)
            h->ports[h->n_ports++] = n;
    }
}

/* ---- taking and giving back keys ------------------------------------------ */

static int take_key(struct ck__allocator *a, const char *key, const char *owner, size_t owner_len,
                    bool dry_run, struct ck_err *reterr)
{
    struct ck_err err = {0};
    int r;
    if (dry_run) {
        const struct ck_kv *kv = NULL;
        r = ck_store_get(a->store, key, strlen(key), 0, &kv, NULL, &err);
        ck_kv_unref(kv);
        r = r == 0 ? CK_EEXIST : r == CK_ENOENT ? 0 : r;
    } else {
        r = ck_store_create(a->store, key, strlen(key), owner, owner_len, NULL, &err);
    }
    if (r < 0 && r != CK_EEXIST)
        ck__err_store(reterr, &err);
    ck_err_release(&err);
    return r;
}

static void give_back_key(struct ck__allocator *a, const char *key, const char *owner,
                          size_t owner_len)
{
    struct ck_store_cmp cmp = {.key = key,
                               .key_len = strlen(key),
                               .target = CK_STORE_CMP_VALUE,
                               .result = CK_STORE_CMP_EQUAL,
                               .value = owner,
                               .value_len = owner_len};
    struct ck_store_op op = {.type = CK_STORE_OP_DELETE, .key = key, .key_len = strlen(key)};
    struct ck_store_txn txn = {.cmps = &cmp, .n_cmps = 1, .then_ops = &op, .n_then = 1};
    struct ck_store_txn_result res = {0};
    struct ck_err err = {0};
    if (ck_store_txn(a->store, &txn, &res, &err) == 0)
        ck_store_txn_result_release(&res);
    else
        CK_LOGW("allocator: cannot give back %s: %s", key, ck_err_message(&err));
    ck_err_release(&err);
}

static void ip_key(uint32_t ip, char *buf, size_t size)
{
    char text[INET_ADDRSTRLEN];
    ip_text(ip, text, sizeof(text));
    snprintf(buf, size, IP_PREFIX "%s", text);
}

static void port_key(int port, char *buf, size_t size)
{
    snprintf(buf, size, PORT_PREFIX "%d", port);
}

/* Gives back the values of h. */
static void give_back(struct ck__allocator *a, const struct ck__allocated *h,
                      const json_t *owner_obj)
{
    size_t len = 0;
    char *owner = owner_value(owner_obj, &len);
    char key[128];
    if (!owner) {
        CK_LOGW("allocator: out of memory giving back a service's values");
        return;
    }
    if (h->ip) {
        ip_key(h->ip, key, sizeof(key));
        give_back_key(a, key, owner, len);
    }
    for (size_t i = 0; i < h->n_ports; i++) {
        port_key(h->ports[i], key, sizeof(key));
        give_back_key(a, key, owner, len);
    }
    free(owner);
}

/* A random free IP of [from, to) then a scan of it; RANGE_FULL when none. */
static int take_ip_in(struct ck__allocator *a, uint32_t from, uint32_t to, const char *owner,
                      size_t len, bool dry_run, uint32_t *ret, struct ck_err *reterr)
{
    if (to <= from)
        return RANGE_FULL;
    char key[128];
    for (int t = 0; t < RANDOM_TRIES; t++) {
        uint32_t ip = a->network + from + random_below(to - from);
        ip_key(ip, key, sizeof(key));
        int r = take_key(a, key, owner, len, dry_run, reterr);
        if (r == 0)
            return *ret = ip, 0;
        if (r != CK_EEXIST)
            return r;
    }
    uint32_t start = random_below(to - from);
    for (uint32_t i = 0; i < to - from; i++) {
        uint32_t ip = a->network + from + (start + i) % (to - from);
        ip_key(ip, key, sizeof(key));
        int r = take_key(a, key, owner, len, dry_run, reterr);
        if (r == 0)
            return *ret = ip, 0;
        if (r != CK_EEXIST)
            return r;
    }
    return RANGE_FULL;
}

static int take_random_ip(struct ck__allocator *a, const char *owner, size_t len, bool dry_run,
                          uint32_t *ret, struct ck_err *reterr)
{
    /* usable offsets are 1 .. size-2; the lower band is for requested IPs */
    uint32_t usable = a->size - 2;
    uint32_t band = usable / 16;
    band = band < 16 ? 16 : band > 256 ? 256 : band;
    if (band >= usable)
        band = 0;
    int r = take_ip_in(a, 1 + band, a->size - 1, owner, len, dry_run, ret, reterr);
    if (r == RANGE_FULL)
        r = take_ip_in(a, 1, 1 + band, owner, len, dry_run, ret, reterr);
    return r;
}

static int take_random_port(struct ck__allocator *a, const char *owner, size_t len, bool dry_run,
                            const struct ck__allocated *taken, int *ret, struct ck_err *reterr)
{
    char key[128];
    uint32_t start = random_below((uint32_t)a->port_size);
    for (int i = 0; i < a->port_size; i++) {
        int port = a->port_base + (int)((start + (uint32_t)i) % (uint32_t)a->port_size);
        if (holds_port(taken, port))
            continue;
        port_key(port, key, sizeof(key));
        int r = take_key(a, key, owner, len, dry_run, reterr);
        if (r == 0)
            return *ret = port, 0;
        if (r != CK_EEXIST)
            return r;
    }
    return RANGE_FULL;
}

/* ---- the hooks the registry calls ----------------------------------------- */

static bool allocates(const struct ck__allocator *a, const struct ck_kind *kind)
{
    return a && kind->role == CK_KIND_ROLE_SERVICE;
}

void ck__allocation_release(struct ck__allocator *a, struct ck__allocation *al, bool committed)
{
    if (!al->active)
        return;
    if (!al->dry_run) {
        if (committed) /* what the old state held and the new one dropped */
            give_back(a, &al->dropped, al->owner);
        else /* what this write took */
            give_back(a, &al->taken, al->owner);
    }
    json_decref(al->owner);
    memset(al, 0, sizeof(*al));
}

/* 422 for a field of obj. */
static int invalid(struct ck_err *reterr, const struct ck_kind *kind, const json_t *obj,
                   const char *field, const char *value, const char *detail)
{
    struct ck_field_errors errs = {0};
    ck_field_errors_add(&errs, CK_FIELD_INVALID, field, value, false, "%s", detail);
    int r = ck__err_invalid_object(reterr, kind, ck__meta_str(obj, "name"), &errs);
    ck_field_errors_release(&errs);
    return r;
}

int ck__allocation_take(struct ck__allocator *a, const struct ck_kind *kind, json_t *obj,
                        const json_t *old, bool dry_run, struct ck__allocation *al,
                        struct ck_err *reterr)
{
    memset(al, 0, sizeof(*al));
    if (!allocates(a, kind))
        return 0;
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec))
        return 0;
    struct ck__allocated before, after_old;
    held_by(old, &before);
    al->active = true;
    al->dry_run = dry_run;
    al->owner = json_incref(obj);
    size_t len = 0;
    char *owner = owner_value(obj, &len);
    if (!owner)
        return ck_err_no_memory(reterr);
    int r = 0;
    char key[128], value[160];
    /* the cluster IP */
    if (needs_cluster_ip(obj)) {
        const char *ip = json_string_value(json_object_get(spec, "clusterIP"));
        const char *first =
            json_string_value(json_array_get(json_object_get(spec, "clusterIPs"), 0));
        if ((!ip || !*ip) && first)
            ip = first;
        uint32_t want = 0;
        if (ip && *ip && !parse_ip(ip, &want)) {
            ; /* not an IPv4 address: validation says so */
        } else if (want && want == before.ip) {
            ; /* kept */
        } else if (want) {
            char text[INET_ADDRSTRLEN];
            ip_text(want, text, sizeof(text));
            snprintf(value, sizeof(value), "[]string{\"%s\"}", text);
            char why[256];
            if (want <= a->network || want >= a->network + a->size - 1) {
                snprintf(why, sizeof(why),
                         "failed to allocate IP %s: the provided IP (%s) is not in the valid "
                         "range. The range of valid IPs is %s",
                         text, text, a->cidr);
                r = invalid(reterr, kind, obj, "spec.clusterIPs", value, why);
                goto out;
            }
            ip_key(want, key, sizeof(key));
            r = take_key(a, key, owner, len, dry_run, reterr);
            if (r == CK_EEXIST) {
                snprintf(why, sizeof(why),
                         "failed to allocate IP %s: provided IP is already allocated", text);
                r = invalid(reterr, kind, obj, "spec.clusterIPs", value, why);
                goto out;
            }
            if (r < 0)
                goto out;
            al->taken.ip = want;
        } else {
            r = take_random_ip(a, owner, len, dry_run, &want, reterr);
            if (r == RANGE_FULL) {
                r = ck_err_internal(reterr, "failed to allocate a serviceIP: range is full");
                goto out;
            }
            if (r < 0)
                goto out;
            al->taken.ip = want;
            char text[INET_ADDRSTRLEN];
            ip_text(want, text, sizeof(text));
            if (json_object_set_new(spec, "clusterIP", json_string(text)) < 0 ||
                json_object_set_new(spec, "clusterIPs", json_pack("[s]", text)) < 0) {
                r = ck_err_no_memory(reterr);
                goto out;
            }
        }
    }
    /* the node ports: numbers asked for first, so a random pick cannot take one of them */
    size_t n_ports = json_array_size(json_object_get(spec, "ports"));
    if (needs_node_ports(obj) && n_ports > CK__ALLOCATION_MAX) {
        struct ck_field_errors errs = {0};
        snprintf(value, sizeof(value), "%zu", n_ports);
        ck_field_errors_add(&errs, CK_FIELD_INVALID, "spec.ports", value, false,
                            "a service with node ports may have at most %d ports",
                            CK__ALLOCATION_MAX);
        r = ck__err_invalid_object(reterr, kind, ck__meta_str(obj, "name"), &errs);
        ck_field_errors_release(&errs);
        goto out;
    }
    if (needs_node_ports(obj)) {
        size_t i;
        json_t *port;
        for (int pass = 0; pass < 2; pass++) {
            json_array_foreach(json_object_get(spec, "ports"), i, port)
            {
                int n = (int)json_integer_value(json_object_get(port, "nodePort"));
                char field[64];
                snprintf(field, sizeof(field), "spec.ports[%zu].nodePort", i);
                if (pass == 0 && n != 0) {
                    if (holds_port(&before, n) || holds_port(&al->taken, n))
                        continue; /* kept, or shared by two protocols */
                    snprintf(value, sizeof(value), "%d", n);
                    if (n < a->port_base || n >= a->port_base + a->port_size) {
                        char why[160];
                        snprintf(why, sizeof(why),
                                 "provided port is not in the valid range. The range of valid "
                                 "ports is %d-%d",
                                 a->port_base, a->port_base + a->port_size - 1);
                        r = invalid(reterr, kind, obj, field, value, why);
                        goto out;
                    }
                    port_key(n, key, sizeof(key));
                    r = take_key(a, key, owner, len, dry_run, reterr);
                    if (r == CK_EEXIST) {
                        r = invalid(reterr, kind, obj, field, value,
                                    "provided port is already allocated");
                        goto out;
                    }
                    if (r < 0)
                        goto out;
                } else if (pass == 1 && n == 0) {
                    r = take_random_port(a, owner, len, dry_run, &al->taken, &n, reterr);
                    if (r == RANGE_FULL) {
                        r = ck_err_internal(reterr, "failed to allocate a nodePort: range is full");
                        goto out;
                    }
                    if (r < 0)
                        goto out;
                    if (json_object_set_new(port, "nodePort", json_integer(n)) < 0) {
                        r = ck_err_no_memory(reterr);
                        goto out;
                    }
                } else {
                    continue;
                }
                if (al->taken.n_ports < CK__ALLOCATION_MAX)
                    al->taken.ports[al->taken.n_ports++] = n;
            }
        }
    }
    /* what the old state held and the new one no longer does: given back on commit */
    held_by(obj, &after_old);
    if (before.ip && before.ip != after_old.ip)
        al->dropped.ip = before.ip;
    for (size_t i = 0; i < before.n_ports; i++)
        if (!holds_port(&after_old, before.ports[i]))
            al->dropped.ports[al->dropped.n_ports++] = before.ports[i];
out:
    free(owner);
    if (r < 0)
        ck__allocation_release(a, al, false);
    return r;
}

void ck__allocation_removed(struct ck__allocator *a, const struct ck_kind *kind, const json_t *obj)
{
    if (!allocates(a, kind))
        return;
    struct ck__allocated h;
    held_by(obj, &h);
    give_back(a, &h, obj);
}

/* ---- the kubernetes Service ------------------------------------------------ */

int ck__allocator_bootstrap(struct ck__registry *reg, int port, struct ck_err *reterr)
{
    const struct ck_kind *kind = ck_kind_with_role(CK_KIND_ROLE_SERVICE);
    if (!kind || !reg->allocator)
        return 0;
    const struct ck_kv *kv = NULL;
    struct ck_err err = {0};
    if (ck__registry_get(reg, kind, "default", "kubernetes", &kv, &err) == 0) {
        ck_kv_unref(kv);
        return 0; /* there already, as a restart or another server left it */
    }
    ck_err_release(&err);
    char ip[INET_ADDRSTRLEN], api_version[CK_API_VERSION_MAX];
    ck__allocator_first_ip(reg->allocator, ip, sizeof(ip));
    ck_kind_api_version(kind, api_version, sizeof(api_version));
    json_t *svc = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:{s:s, s:[{s:s, s:i, s:s, s:i}], s:s, s:s}}",
        "apiVersion", api_version, "kind", kind->kind, "metadata", "name", "kubernetes",
        "namespace", "default", "labels", "component", "apiserver", "provider", "kubernetes",
        "spec", "clusterIP", ip, "ports", "name", "https", "port", 443, "protocol", "TCP",
        "targetPort", port, "sessionAffinity", "None", "type", "ClusterIP");
    char *out = NULL;
    size_t len = 0;
    int r = svc ? ck__registry_create(reg, kind, "default", svc, false, &out, &len, &err)
                : ck_err_no_memory(&err);
    json_decref(svc);
    free(out);
    /* not fatal: the server serves without it, as kube-apiserver retries it in the background */
    if (r < 0 && r != CK_EEXIST)
        CK_LOGW("cannot create the kubernetes service: %s", ck_err_message(&err));
    ck_err_release(&err);
    (void)reterr;
    return 0;
}
