/*
 * node.c - `ckube server`'s own node: the agent (ckube's kubelet, lib/agent) run in the
 * server's process for its host, as `k3s server` runs a kubelet, unless --disable-agent.
 *
 * The agent is a client of the server like any other: over HTTPS with a client
 * certificate for system:node:NAME in group system:nodes, signed by the cluster CA and
 * kept in the PKI directory as system-node-NAME.crt/.key (the name `ckube certs client`
 * gives it), so the Node authorizer and admission treat it as any node's kubelet. Its
 * informers (the pods bound to it, the Services) list and watch straight from the server,
 * in-process, as that same user in system:nodes: RBAC and the node authorizer judge those
 * reads as they judge its client's requests, which make every write. It
 * starts on a thread of its own that calls ck_agent_run() every second until the node is
 * registered, as `ckube agent` does while its server is not up.
 *
 * With the node come its Service routing, the proxy of lib/proxy (kube-proxy's nftables
 * mode, reading as system:kube-proxy, or the in-process controllers' caches; --disable-proxy
 * leaves it out) with NetworkPolicies enforced (--disable-network-policy turns that off), and the
 * agent's pod DNS settings: the cluster DNS Service's address and the cluster domain when the
 * server runs the cluster DNS (cluster_dns.c), and the advertise address as node IP.
 *
 * The runtime: cri (the default) runs containers through a CRI runtime: the endpoint
 * given, else a containerd of the server's own (containerd.c) when containerd is
 * installed and the server runs as root; otherwise the server logs why and the ways out
 * and runs without a node, where k3s would fail to start (docs/differences.md says why). process
 * runs pods' commands as host processes of the server's user, without isolation: only when asked
 * for, with a warning.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckube/auth.h"
#include "ckube/informer.h"
#include "ckube/internal/util.h"
#include "ckube/proxy.h"
#include "ckube/rest.h"
#include "ckube/util.h"
#include "controllers.h"
#include "node.h"

struct ck_cmd_node {
    struct ck_cmd_containerd *containerd;
    struct ck_rest *client;
    struct ck_rest *proxy_client;  /* as system:kube-proxy */
    struct ck_proxy *proxy;        /* the node's Service routing; NULL: --disable-proxy */
    const char *cluster_dns[1];    /* the agent's cluster DNS server (o's string) */
    struct ck_agent *agent;        /* made by the starter once the runtime answers */
    struct ck_agent_config config; /* its strings are n's, the options' or containerd's */
    struct ck_apiserver *server;   /* the agent's informers read from it */
    struct ck_list_watch_maker in_process;
    char user[300]; /* system:node:NAME */
    pthread_t starter;
    bool starter_running;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stop; /* guarded by mu */
    char name[256];
    char root[PATH_MAX], cni_conf[PATH_MAX + 16], client_ca[PATH_MAX + 16];
};

/* The host's name as kubelet's default node name: lowercased. "" when it has none. */
static void host_name(char *buf, size_t size)
{
    if (gethostname(buf, size) < 0)
        buf[0] = '\0';
    buf[size - 1] = '\0';
    for (char *p = buf; *p; p++)
        *p = (char)tolower((unsigned char)*p);
}

/* A DNS subdomain (RFC 1123), as a Node's name must be: labels of a-z, 0-9 and '-', each
 * 1 to 63 long, starting and ending alphanumeric, joined by '.'; 253 at most. */
static bool valid_node_name(const char *s)
{
    size_t n = strlen(s), label = 0;
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i <= n; i++) {
        char ch = s[i];
        if (ch == '.' || ch == '\0') {
            if (label == 0 || label > 63 || s[i - 1] == '-')
                return false;
            label = 0;
            continue;
        }
        bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        if (!alnum && (ch != '-' || label == 0))
            return false;
        label++;
    }
    return true;
}

const char *ck_cmd_node_check(const struct ck_cmd_node_options *o)
{
    if (o->runtime && strcmp(o->runtime, "cri") != 0 && strcmp(o->runtime, "process") != 0)
        return "--container-runtime: want cri or process";
    if (o->runtime && strcmp(o->runtime, "process") == 0 &&
        (o->runtime_endpoint || o->image_endpoint))
        return "--container-runtime-endpoint and --image-service-endpoint apply to the cri "
               "runtime only";
    if (o->node_name && !valid_node_name(o->node_name))
        return "--node-name: want a lowercase DNS subdomain (a-z, 0-9, '-' and '.')";
    return NULL;
}

/* mkdir -p for a directory of ours (0700). 0, or -1 with errno. */
static int make_dirs(const char *path)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s", path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0700) < 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    if (mkdir(p, 0700) < 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

static void *starter_main(void *arg)
{
    struct ck_cmd_node *n = arg;
    pthread_mutex_lock(&n->mu);
    for (unsigned tries = 0; !n->stop; tries++) {
        pthread_mutex_unlock(&n->mu);
        struct ck_err err = {0};
        /* the agent is made once its runtime answers (a supervised containerd starts
           beside the server), then runs once the server serves */
        int r = n->agent ? 0 : ck_agent_new(&n->config, &n->agent, &err);
        if (r == 0)
            r = ck_agent_run(n->agent, &err);
        pthread_mutex_lock(&n->mu);
        if (r == 0) {
            CK_LOGS(0, "Node agent running", "node", n->name);
            break;
        }
        if (tries % 30 == 5) /* the first seconds are the runtime's and the server's start */
            CK_LOGE("node agent: not started yet (retrying each second): %s", err.msg);
        else
            CK_LOGV(1, "node agent: not started yet: %s", err.msg);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        while (!n->stop && pthread_cond_timedwait(&n->cond, &n->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

/*
 * Pods on the node's bridge talk at layer 2: only with net.bridge.bridge-nf-call-iptables
 * set do their packets pass the forward hook where NetworkPolicies are judged. k3s sets
 * it (after loading br_netfilter) for its network policy controller; so does the server,
 * when the module is there (the proxy logs why policies leak when it is not). The setting
 * is the network namespace's own.
 */
static void bridged_traffic_to_netfilter(void)
{
    static const char path[] = "/proc/sys/net/bridge/bridge-nf-call-iptables";
    FILE *f = fopen(path, "r");
    int c = f ? fgetc(f) : EOF;
    if (f)
        fclose(f);
    if (!f || c == '1')
        return;
    f = fopen(path, "w");
    bool set = f && fputs("1\n", f) >= 0;
    if (f && fclose(f) != 0)
        set = false;
    if (set)
        CK_LOGS(0, "Set for NetworkPolicies", "sysctl", "net.bridge.bridge-nf-call-iptables",
                "value", "1");
}

/*
 * The node's Service routing (lib/proxy): kube-proxy's part, in-process as k3s runs it,
 * reading as system:kube-proxy (bootstrap RBAC's system:node-proxier). Without nftables
 * in the kernel it logs why and the node runs without it. 0, or -1 (out of memory).
 */
static int start_proxy(const struct ck_apiserver *server, struct ck_cmd_node *n,
                       const struct ck_cmd_node_options *o)
{
    struct ck_err err = {0};
    if (ck_cmd_component_client(server, "kube-proxy", "system:kube-proxy", NULL, -1, 0,
                                &n->proxy_client, &err) < 0) {
        CK_LOGE("No proxy for the node: no client for it: %s", err.msg);
        return 0;
    }
    struct ck_proxy_config config = {
        .hostname = n->name,
        .cluster_cidr = o->cluster_cidr,
        .healthz_bind_address = "0.0.0.0:10256", /* kube-proxy's */
        .metrics_bind_address = "127.0.0.1:10249",
        .factory = o->factory,
        /* the policies, pods and namespaces come from the process's caches, which
           system:kube-proxy could not list itself */
        .network_policy = !o->disable_network_policy && o->factory,
    };
    if (config.network_policy)
        bridged_traffic_to_netfilter();
    else if (!o->disable_network_policy)
        CK_LOGS(0,
                "NetworkPolicies are not enforced on the node: the controllers do not run in "
                "the server (run `ckube proxy --network-policy` beside it)",
                "node", n->name);
    int r = ck_proxy_new(&config, n->proxy_client, &n->proxy, &err);
    if (r == 0)
        r = ck_proxy_start(n->proxy, &err);
    if (r < 0) {
        CK_LOGE("No proxy for the node: %s (Services route nowhere from this node; pass "
                "--disable-proxy to say so)",
                err.msg);
        n->proxy = ck_proxy_free(n->proxy);
        return r == CK_ENOMEM ? -1 : 0;
    }
    CK_LOGS(0, "Proxy running", "node", n->name, "table", "ip " CK_PROXY_TABLE);
    return 0;
}

/* The agent's informers' reads, in-process, as its client's user: system:node:NAME. */
static int in_process_list_watch(void *arg, const struct ck_resource *res, const char *namespace,
                                 bool metadata, struct ck_list_watch *ret_lw, struct ck_err *reterr)
{
    static const char *const groups[] = {"system:nodes", "system:authenticated"};
    const struct ck_cmd_node *n = arg;
    return (metadata ? ck_apiserver_metadata_list_watch_init : ck_apiserver_list_watch_init)(
        n->server, res->group, res->version, res->resource, namespace, n->user, groups, 2, ret_lw,
        reterr);
}

static void release_list_watch(void *arg, struct ck_list_watch *lw)
{
    (void)arg;
    ck_apiserver_list_watch_release(lw);
}

/* The agent's client: the server's URL, as system:node:NAME when it speaks TLS. */
static int node_client(const struct ck_apiserver *server, const char *name, struct ck_rest **ret,
                       struct ck_err *reterr)
{
    char cn[300], base[300];
    snprintf(cn, sizeof(cn), "system:node:%s", name);
    snprintf(base, sizeof(base), "system-node-%s", name);
    /* in the server's process: no client-side limit (kubelet's 50/100 guard a remote server) */
    return ck_cmd_component_client(server, base, cn, "system:nodes", -1, 0, ret, reterr);
}

int ck_cmd_node_start(struct ck_apiserver *server, const struct ck_cmd_node_options *o,
                      struct ck_cmd_node **ret)
{
    *ret = NULL;
    if (o->disabled)
        return 0;
    bool process = o->runtime && strcmp(o->runtime, "process") == 0;
    char containerd[PATH_MAX];
    if (!process && !o->runtime_endpoint &&
        !ck_cmd_containerd_find(containerd, sizeof(containerd))) {
        CK_LOGE("No node: the container runtime is cri and containerd is not installed (not on "
                "PATH), and no --container-runtime-endpoint was given. Install containerd and "
                "runc (the server then runs its own containerd), or point the server at a "
                "running one with --container-runtime-endpoint unix:///PATH, or run pods as "
                "host processes with --container-runtime process (not isolated), or pass "
                "--disable-agent to run without a node");
        return 0;
    }
    if (!process && !o->runtime_endpoint && geteuid() != 0) {
        CK_LOGE("No node: the server's own containerd needs root, and this server runs as uid "
                "%u. Run the server as root, or point it at a running runtime with "
                "--container-runtime-endpoint unix:///PATH, or run pods as host processes with "
                "--container-runtime process (not isolated), or pass --disable-agent to run "
                "without a node",
                (unsigned)geteuid());
        return 0;
    }
    struct ck_cmd_node *n = calloc(1, sizeof(*n));
    if (!n) {
        CK_LOGE("node: out of memory");
        return -1;
    }
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->cond, NULL);
    if (o->node_name)
        snprintf(n->name, sizeof(n->name), "%s", o->node_name);
    else
        host_name(n->name, sizeof(n->name));
    if (!valid_node_name(n->name)) {
        CK_LOGE("No node: the host name \"%s\" is not a valid node name; pass --node-name",
                n->name);
        ck_cmd_node_stop(n);
        return 0;
    }
    char *abs_data = realpath(o->data_dir, NULL);
    if (!abs_data) {
        CK_LOGE("node: %s: %s", o->data_dir, strerror(errno));
        ck_cmd_node_stop(n);
        return -1;
    }
    if (o->root_dir)
        snprintf(n->root, sizeof(n->root), "%s", o->root_dir);
    else
        snprintf(n->root, sizeof(n->root), "%s/agent", abs_data);
    snprintf(n->cni_conf, sizeof(n->cni_conf), "%s/cni/net.d", n->root);
    if (make_dirs(n->root) < 0 || (!process && make_dirs(n->cni_conf) < 0)) {
        CK_LOGE("node: cannot make %s: %s", n->root, strerror(errno));
        free(abs_data);
        ck_cmd_node_stop(n);
        return -1;
    }
    struct ck_agent_config config = {
        .node_name = n->name,
        .node_ip = o->node_ip && *o->node_ip ? o->node_ip : NULL,
        .cluster_domain = o->cluster_domain,
        .root_dir = n->root,
        .port = o->port,
        .runtime = process ? CK_AGENT_RUNTIME_PROCESS : CK_AGENT_RUNTIME_CRI,
        .runtime_endpoint = o->runtime_endpoint,
        .image_endpoint = o->image_endpoint,
        .cni_conf_dir = n->cni_conf,
        .cni_bin_dir = CK_AGENT_CNI_BIN_DIR,
    };
    if (process)
        CK_LOGW("The node's container runtime is process: pods' commands run on this host as "
                "the server's user (uid %u), not isolated from it or from each other",
                (unsigned)getuid());
    else if (!o->runtime_endpoint &&
             ck_cmd_containerd_start(containerd, abs_data, n->cni_conf, CK_AGENT_CNI_BIN_DIR,
                                     &n->containerd) < 0) {
        free(abs_data);
        ck_cmd_node_stop(n);
        return -1;
    }
    free(abs_data);
    if (n->containerd)
        config.runtime_endpoint = ck_cmd_containerd_endpoint(n->containerd);
    /* the server's own client certificate for agents (apiserver-kubelet-client) */
    snprintf(n->client_ca, sizeof(n->client_ca), "%s/%s", o->pki_dir ? o->pki_dir : "",
             CK_PKI_CA_CERT);
    if (o->pki_dir && !o->own_kubelet_client && access(n->client_ca, R_OK) == 0)
        config.client_ca_file = n->client_ca;
    struct ck_err err = {0};
    if (node_client(server, n->name, &n->client, &err) < 0) {
        /* a client CA of the user's own: no CA key here to sign the node's certificate */
        CK_LOGE("No node: no credentials for system:node:%s (%s); run `ckube agent` with a "
                "certificate your CA signed, or pass --disable-agent",
                n->name, err.msg);
        ck_cmd_node_stop(n);
        return 0;
    }
    config.client = n->client;
    n->server = server;
    snprintf(n->user, sizeof(n->user), "system:node:%s", n->name);
    n->in_process = (struct ck_list_watch_maker){in_process_list_watch, release_list_watch, n};
    config.list_watch = &n->in_process;
    if (o->cluster_dns) {
        n->cluster_dns[0] = o->cluster_dns;
        config.cluster_dns = n->cluster_dns;
        config.n_cluster_dns = 1;
    }
    n->config = config;
    if (!o->disable_proxy && start_proxy(server, n, o) < 0) {
        ck_cmd_node_stop(n);
        return -1;
    }
    if (pthread_create(&n->starter, NULL, starter_main, n) != 0) {
        CK_LOGE("node: cannot start the agent");
        ck_cmd_node_stop(n);
        return -1;
    }
    n->starter_running = true;
    CK_LOGS(0, "Node agent starting", "node", n->name, "runtime", process ? "process" : "cri",
            "endpoint", config.runtime_endpoint ? config.runtime_endpoint : "", "rootDir", n->root);
    *ret = n;
    return 0;
}

void ck_cmd_node_stop(struct ck_cmd_node *n)
{
    if (!n)
        return;
    if (n->starter_running) {
        pthread_mutex_lock(&n->mu);
        n->stop = true;
        pthread_cond_broadcast(&n->cond);
        pthread_mutex_unlock(&n->mu);
        pthread_join(n->starter, NULL);
    }
    ck_proxy_free(n->proxy);
    ck_rest_free(n->proxy_client);
    ck_agent_free(n->agent);
    ck_rest_free(n->client);
    ck_cmd_containerd_stop(n->containerd);
    pthread_cond_destroy(&n->cond);
    pthread_mutex_destroy(&n->mu);
    free(n);
}
