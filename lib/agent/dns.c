/*
 * dns.c - a pod's DNS configuration (the resolv.conf its sandbox gets), as the kubelet's
 * DNS configurer forms it (pkg/kubelet/network/dns/dns.go, GetPodDNS).
 *
 * The base is the node's resolver configuration (--resolv-conf, default
 * /etc/resolv.conf): its nameserver lines accumulate, its last search line and its last
 * options line win. Then by the pod's dnsPolicy:
 *   - ClusterFirst (the default) and ClusterFirstWithHostNet: the cluster DNS servers
 *     (--cluster-dns) as the only nameservers, search "<ns>.svc.<domain> svc.<domain>
 *     <domain>" then the host's search domains (duplicates dropped; the host's alone
 *     without a --cluster-domain), options "ndots:5". A ClusterFirst pod on the host
 *     network is Default instead. Without cluster DNS servers the pod falls back to
 *     Default, with a MissingClusterDNS warning, as the kubelet does.
 *   - Default: the host's configuration as it is; with --resolv-conf "" the local
 *     resolver (127.0.0.1: ckube's nodes are IPv4) and search ".".
 *   - None: nothing but the pod's dnsConfig.
 * The pod's dnsConfig is then appended: nameservers and searches without duplicates,
 * options merged by name (a pod's option replaces the host's of the same name).
 * Last the limits: at most 3 nameservers, at most 32 search domains, none longer than
 * 253 characters, the search line at most 2048 characters (the ExpandedDNSConfig limits,
 * which Kubernetes 1.32 always applies); what is cut is said in a DNSConfigForming
 * warning.
 *
 * One difference: the kubelet's merged options come out in a Go map's (random) order;
 * here the host's come first, in their order, then the pod's new ones.
 *
 * Threading: no state; each call reads the resolver file afresh.
 */
#define _GNU_SOURCE /* asprintf, strndup */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_NAMESERVERS       3
#define MAX_SEARCH_PATHS      32
#define MAX_SEARCH_LIST_CHARS 2048
#define MAX_SEARCH_NAME       253 /* a DNS-1123 subdomain's maximum length */
#define MAX_RESOLV_CONF       (10 << 20)

/* A list of owned strings. */
struct strs {
    char **v;
    size_t n;
};

static bool strs_has(const struct strs *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return true;
    return false;
}

static int strs_add_len(struct strs *l, const char *s, size_t len)
{
    char **v = realloc(l->v, (l->n + 1) * sizeof(*v));
    if (!v)
        return CK_ENOMEM;
    l->v = v;
    if (!(v[l->n] = strndup(s, len)))
        return CK_ENOMEM;
    l->n++;
    return 0;
}

static int strs_add(struct strs *l, const char *s)
{
    return strs_add_len(l, s, strlen(s));
}

/* Adds s unless the list holds it already (the kubelet's omitDuplicates). */
static int strs_add_new(struct strs *l, const char *s)
{
    return strs_has(l, s) ? 0 : strs_add(l, s);
}

static void strs_clear(struct strs *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static void strs_cut(struct strs *l, size_t n)
{
    while (l->n > n)
        free(l->v[--l->n]);
}

/*
 * Reads a resolver configuration as the kubelet's parseResolvConf: "nameserver A" lines
 * accumulate, the last "search" line's domains (a trailing dot dropped) and the last
 * "options" line win; '#' lines are comments.
 */
static int parse_resolv_conf(const char *path, struct strs *servers, struct strs *searches,
                             struct strs *options, struct ck_err *reterr)
{
    char *text = NULL;
    size_t len = 0;
    int r = ck__read_file(path, MAX_RESOLV_CONF, &text, &len);
    if (r < 0)
        return ck_err_set(reterr, r, "cannot read the resolver configuration %s: %s", path,
                          strerror(-r));
    bool empty_nameserver = false;
    for (char *line = text, *next; r == 0 && line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *save = NULL, *word = strtok_r(line, " \t\r\f\v", &save);
        if (!word || word[0] == '#')
            continue;
        if (strcmp(word, "nameserver") == 0) {
            char *a = strtok_r(NULL, " \t\r\f\v", &save);
            if (a)
                r = strs_add(servers, a);
            else
                empty_nameserver = true;
        } else if (strcmp(word, "search") == 0 || strcmp(word, "options") == 0) {
            bool search = word[0] == 's';
            struct strs *l = search ? searches : options;
            strs_clear(l);
            for (char *w; r == 0 && (w = strtok_r(NULL, " \t\r\f\v", &save));) {
                size_t n = strlen(w);
                if (search && n > 0 && w[n - 1] == '.')
                    n--;
                r = strs_add_len(l, w, n);
            }
        }
    }
    free(text);
    if (r < 0)
        return ck_err_set(reterr, r, "out of memory");
    if (empty_nameserver)
        return ck_err_set(reterr, CK_EINVAL, "%s: nameserver list is empty", path);
    return 0;
}

/* The option's name: up to its ':'. */
static size_t option_name_len(const char *op)
{
    const char *colon = strchr(op, ':');
    return colon ? (size_t)(colon - op) : strlen(op);
}

/* The kubelet's mergeDNSOptions: the pod's option replaces the one of the same name. */
static int merge_options(struct strs *options, const json_t *pod_options)
{
    size_t i;
    const json_t *o;
    json_array_foreach(pod_options, i, o)
    {
        const char *name = json_string_value(json_object_get(o, "name"));
        const char *value = json_string_value(json_object_get(o, "value"));
        if (!name)
            continue;
        char *op = NULL;
        if (value && *value ? asprintf(&op, "%s:%s", name, value) < 0 : !(op = strdup(name)))
            return CK_ENOMEM;
        size_t n = strlen(name), k;
        for (k = 0; k < options->n; k++)
            if (option_name_len(options->v[k]) == n && strncmp(options->v[k], name, n) == 0)
                break;
        if (k < options->n) {
            free(options->v[k]);
            options->v[k] = op;
        } else {
            int r = strs_add(options, op);
            free(op);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

static void warn(struct ck__pod_dns *ret, const char *reason, const char *fmt_msg, ...)
    __attribute__((format(printf, 3, 4)));
static void warn(struct ck__pod_dns *ret, const char *reason, const char *fmt_msg, ...)
{
    if (ret->n_warnings >= sizeof(ret->warnings) / sizeof(ret->warnings[0]))
        return;
    struct ck__pod_dns_warning *w = &ret->warnings[ret->n_warnings++];
    snprintf(w->reason, sizeof(w->reason), "%s", reason);
    va_list ap;
    va_start(ap, fmt_msg);
    vsnprintf(w->message, sizeof(w->message), fmt_msg, ap);
    va_end(ap);
}

/* The names joined by spaces, cut to fit buf. */
static void joined(const struct strs *l, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < l->n && at < size; i++) {
        int n = snprintf(buf + at, size - at, "%s%s", i ? " " : "", l->v[i]);
        if (n < 0)
            break;
        at += (size_t)n;
    }
}

/* The kubelet's formDNSSearchFitsLimits. */
static void fit_searches(struct strs *searches, struct ck__pod_dns *ret)
{
    bool exceeded = false;
    if (searches->n > MAX_SEARCH_PATHS) {
        strs_cut(searches, MAX_SEARCH_PATHS);
        exceeded = true;
    }
    size_t kept = 0;
    for (size_t i = 0; i < searches->n; i++) {
        if (strlen(searches->v[i]) > MAX_SEARCH_NAME) {
            free(searches->v[i]);
            exceeded = true;
            continue;
        }
        searches->v[kept++] = searches->v[i];
    }
    searches->n = kept;
    size_t line = 0;
    for (size_t i = 0; i < searches->n; i++)
        line += strlen(searches->v[i]) + (i ? 1 : 0);
    if (line > MAX_SEARCH_LIST_CHARS) {
        size_t cut = 0;
        while (searches->n > 0 && line - cut > MAX_SEARCH_LIST_CHARS) {
            cut += strlen(searches->v[searches->n - 1]) + 1;
            strs_cut(searches, searches->n - 1);
        }
        exceeded = true;
    }
    if (exceeded) {
        char applied[MAX_SEARCH_LIST_CHARS + 1];
        joined(searches, applied, sizeof(applied));
        warn(ret, "DNSConfigForming",
             "Search Line limits were exceeded, some search paths have been omitted, the "
             "applied search line is: %.400s",
             applied);
    }
}

static void fit_servers(struct strs *servers, struct ck__pod_dns *ret)
{
    if (servers->n <= MAX_NAMESERVERS)
        return;
    strs_cut(servers, MAX_NAMESERVERS);
    char applied[256];
    joined(servers, applied, sizeof(applied));
    warn(ret, "DNSConfigForming",
         "Nameserver limits were exceeded, some nameservers have been omitted, the applied "
         "nameserver line is: %s",
         applied);
}

int ck__pod_dns_config(const struct ck__dns_node *node, const json_t *pod, struct ck__pod_dns *ret,
                       struct ck_err *reterr)
{
    memset(ret, 0, sizeof(*ret));
    struct strs servers = {0}, searches = {0}, options = {0};
    const json_t *spec = json_object_get(pod, "spec");
    const char *policy = json_string_value(json_object_get(spec, "dnsPolicy"));
    bool host_network = json_is_true(json_object_get(spec, "hostNetwork"));
    bool have_resolv = node->resolv_conf && *node->resolv_conf;
    int r = 0;
    if (have_resolv &&
        parse_resolv_conf(node->resolv_conf, &servers, &searches, &options, reterr) < 0)
        goto fail;
    enum { CLUSTER, HOST, NONE } type = CLUSTER;
    if (policy && strcmp(policy, "None") == 0)
        type = NONE;
    else if (policy && strcmp(policy, "Default") == 0)
        type = HOST;
    else if ((!policy || strcmp(policy, "ClusterFirst") == 0) && host_network)
        type = HOST; /* ClusterFirst on the host network falls back to Default */

    if (type == NONE) {
        strs_clear(&servers);
        strs_clear(&searches);
        strs_clear(&options);
    } else if (type == CLUSTER && node->n_cluster_dns > 0) {
        strs_clear(&servers);
        for (size_t i = 0; r == 0 && i < node->n_cluster_dns; i++)
            r = strs_add(&servers, node->cluster_dns[i]);
        if (node->cluster_domain && *node->cluster_domain) {
            const char *ns =
                json_string_value(json_object_get(json_object_get(pod, "metadata"), "namespace"));
            struct strs cluster = {0};
            char *a = NULL, *b = NULL;
            if (asprintf(&a, "%s.svc.%s", ns ? ns : "default", node->cluster_domain) < 0)
                a = NULL;
            if (asprintf(&b, "svc.%s", node->cluster_domain) < 0)
                b = NULL;
            if (!a || !b)
                r = CK_ENOMEM;
            if (r == 0)
                r = strs_add_new(&cluster, a);
            if (r == 0)
                r = strs_add_new(&cluster, b);
            if (r == 0)
                r = strs_add_new(&cluster, node->cluster_domain);
            for (size_t i = 0; r == 0 && i < searches.n; i++)
                r = strs_add_new(&cluster, searches.v[i]);
            free(a);
            free(b);
            strs_clear(&searches);
            searches = cluster;
        }
        strs_clear(&options);
        if (r == 0)
            r = strs_add(&options, "ndots:5");
    } else {
        if (type == CLUSTER) {
            const char *m = "kubelet does not have ClusterDNS IP configured and cannot create Pod "
                            "using \"ClusterFirst\" policy. Falling back to \"Default\" policy.";
            warn(ret, "MissingClusterDNS", "%s", m);
        }
        if (!have_resolv) {
            strs_clear(&servers);
            r = strs_add(&servers, "127.0.0.1");
            strs_clear(&searches);
            if (r == 0)
                r = strs_add(&searches, ".");
        }
    }
    const json_t *dc = json_object_get(spec, "dnsConfig");
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(dc, "nameservers"), i, v) if (r == 0 && json_is_string(v))
        r = strs_add_new(&servers, json_string_value(v));
    json_array_foreach(json_object_get(dc, "searches"), i, v) if (r == 0 && json_is_string(v)) r =
        strs_add_new(&searches, json_string_value(v));
    if (r == 0)
        r = merge_options(&options, json_object_get(dc, "options"));
    if (r < 0) {
        ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto fail;
    }
    fit_servers(&servers, ret);
    fit_searches(&searches, ret);
    ret->servers = servers.v;
    ret->n_servers = servers.n;
    ret->searches = searches.v;
    ret->n_searches = searches.n;
    ret->options = options.v;
    ret->n_options = options.n;
    return 0;
fail:
    strs_clear(&servers);
    strs_clear(&searches);
    strs_clear(&options);
    return reterr->code ? reterr->code : CK_ENOMEM;
}

void ck__pod_dns_release(struct ck__pod_dns *d)
{
    struct strs l[] = {
        {d->servers, d->n_servers}, {d->searches, d->n_searches}, {d->options, d->n_options}};
    for (size_t i = 0; i < 3; i++)
        strs_clear(&l[i]);
    memset(d, 0, sizeof(*d));
}
