/*
 * agent.c - `ckube agent`: the node agent (ckube's kubelet).
 *
 *   ckube agent --kubeconfig FILE --node-name NAME --root-dir DIR [--config FILE]
 *               [--node-ip IP]
 *               [--feature-gates A=true,B=false] [--max-pods 110] [--pod-workers N]
 *               [--port 10250]
 *               [--tls-cert-file F --tls-private-key-file F] [--client-ca-file F]
 *               [--container-runtime cri|process]
 *               [--container-runtime-endpoint unix:///run/containerd/containerd.sock]
 *               [--image-service-endpoint URL] [--cni-conf-dir /etc/cni/net.d]
 *               [--cni-bin-dir /usr/lib/cni] [--pod-cidr CIDR] [--cgroup-root /]
 *               [--cluster-dns 10.96.0.10] [--cluster-domain cluster.local]
 *               [--resolv-conf /etc/resolv.conf] [--container-log-max-size 10Mi]
 *               [--container-log-max-files 5] [--container-log-monitor-interval 10s]
 *
 * Reads a KubeletConfiguration-style file (--config), then the flags on top (flags win
 * per setting; feature gates merge as kubelet's: the file's map, then --feature-gates),
 * logs the effective feature gates, registers the node and runs the pods bound to it
 * with the runtime --container-runtime selects (cri: a CRI runtime such as containerd;
 * process: the containers' commands as local processes) until SIGINT or SIGTERM (which
 * leave the containers running, as the kubelet does); lib/agent/agent.c does the work.
 * Exit codes as main.c's: 0 after a signal, 1 runtime failure, 2 usage error.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/agent.h"
#include "ckube/api.h"
#include "ckube/featuregate.h"
#include "ckube/internal/util.h"
#include "controllers.h"

static const char usage[] =
    "Usage: ckube agent --kubeconfig FILE --node-name NAME --root-dir DIR [flags]\n"
    "\n"
    "Registers a node and runs the pods bound to it with the container runtime that\n"
    "--container-runtime selects: cri, a CRI runtime such as containerd (at\n"
    "--container-runtime-endpoint), or process, where the containers' command and args\n"
    "run on this host as the agent's user, unisolated, and images are ignored.\n"
    "\n"
    "Flags:\n"
    "      --kubeconfig FILE      kubeconfig of the server (required; with\n"
    "                             --bootstrap-kubeconfig, written when missing)\n"
    "      --bootstrap-kubeconfig FILE  a kubeconfig with a bootstrap token: when\n"
    "                             --kubeconfig is missing or its certificate expired, the\n"
    "                             node's client certificate is requested with it (a\n"
    "                             CertificateSigningRequest) and --kubeconfig written\n"
    "      --cert-dir DIR         where that certificate goes (default ROOT-DIR/pki)\n"
    "      --node-name NAME       the node's name (required)\n"
    "      --root-dir DIR         where pods' directories and logs go (required; must exist)\n"
    "      --node-ip IP           the node's InternalIP address (default: the host's first\n"
    "                             non-loopback IPv4 address)\n"
    "      --config FILE          a KubeletConfiguration YAML file; flags win over it\n"
    "      --feature-gates LIST   A=true,B=false, applied over the file's featureGates\n"
    "      --max-pods N           pods this node takes (default 110)\n"
    "      --pod-workers N        pods synced at once, each by one worker at a time\n"
    "                             (default 4 per core, at least 8; at most 256)\n"
    "      --port N               the node's port, as published in its status (default 10250)\n"
    "      --container-log-max-size Q   rotate a container's log past this size (default 10Mi)\n"
    "      --container-log-max-files N  log files kept per container, current one included\n"
    "                             (default 5, at least 2)\n"
    "      --container-log-monitor-interval D  how often the CRI runtime's container logs\n"
    "                             are looked at for rotation (default 10s, at least 3s)\n"
    "      --no-cgroups           limits as rlimits even with a delegated cgroup v2\n"
    "      --tls-cert-file FILE   the HTTPS serving certificate of logs and exec (default:\n"
    "                             one the agent signs itself into ROOT-DIR/pki)\n"
    "      --tls-private-key-file FILE  its key\n"
    "      --client-ca-file FILE  accept only client certificates this CA signed\n"
    "      --container-runtime NAME  cri or process (default cri). process runs the\n"
    "                             containers' commands as processes of this host, as the\n"
    "                             agent's user, without isolation; images are ignored\n"
    "      --container-runtime-endpoint URL  the CRI runtime's socket\n"
    "                             (default unix:///run/containerd/containerd.sock)\n"
    "      --image-service-endpoint URL  the CRI image service's socket (default: the\n"
    "                             runtime's)\n"
    "      --cni-conf-dir DIR     the CNI configuration directory of the CRI runtime; the\n"
    "                             agent writes one for its node there when it holds none\n"
    "                             (default /etc/cni/net.d)\n"
    "      --cni-bin-dir DIR      where the CNI plugins are, as the CRI runtime is\n"
    "                             configured (default /usr/lib/cni)\n"
    "      --pod-cidr CIDR        the node's pod range when its Node still has no\n"
    "                             spec.podCIDR (which the controller manager gives) two\n"
    "                             minutes after registering (default: none; until a range\n"
    "                             is known, pods outside the host network wait)\n"
    "      --cluster-dns IPS      comma-separated cluster DNS servers pods with dnsPolicy\n"
    "                             ClusterFirst use (default: none, such pods get Default)\n"
    "      --cluster-domain NAME  the cluster's DNS domain; pods search <ns>.svc.NAME,\n"
    "                             svc.NAME and NAME first (default: none)\n"
    "      --resolv-conf FILE     the resolver configuration pods' DNS starts from\n"
    "                             (default /etc/resolv.conf; \"\": none)\n"
    "      --cgroup-root CGROUP   the cgroup pods' cgroups go under, as CGROUP/kubepods/...\n"
    "                             (default /)\n"
    "      --sync-frequency D     how often running pods' ConfigMap, Secret, downward API\n"
    "                             and token volumes are written again (default 1m)\n"
    "      --container-gc-period D  how often the CRI runtime's dead containers and\n"
    "                             sandboxes are collected (default 1m; 0s: never)\n"
    "      --minimum-container-ttl-duration D  dead containers younger than this stay\n"
    "                             (default 0s)\n"
    "      --maximum-dead-containers-per-container N  dead containers kept per pod and\n"
    "                             container name (default 1; -1: no limit)\n"
    "      --maximum-dead-containers N  dead containers kept on the node (default -1: no\n"
    "                             limit)\n"
    "      --image-gc-high-threshold PCT  image filesystem use from which unused images\n"
    "                             are removed, every fifth container GC period (default\n"
    "                             85; 100: never)\n"
    "      --image-gc-low-threshold PCT  removed down to this use (default 80)\n"
    "      --minimum-image-ttl-duration D  images first seen more recently stay (default\n"
    "                             2m)\n"
    "  -v, --v N                  log verbosity (default 0)\n"
    "      --logging-format FORMAT  text (klog) or json (default text)\n"
    "  -h, --help                 print this help\n";

static int usage_error(const char *what, const char *value)
{
    fprintf(stderr, "error: %s%s%s\n\n%s", what, value ? ": " : "", value ? value : "", usage);
    return 2;
}

/* The agent's own feature gates (kubelet gates whose behaviour it has). */
static struct ck_fg_gate *agent_gates(void)
{
    struct ck_fg_gate *g = ck_fg_gate_new(ck_fg_version_mm(1, 32));
    struct ck_fg_err err = {0};
    if (!g)
        return NULL;
    struct ck_fg_spec beta_on = {.default_value = true, .stage = CK_FG_BETA};
    if (ck_fg_add(g, "PodReadyToStartContainersCondition", beta_on, NULL, &err) < 0 ||
        ck_fg_add(g, "KubeletSeparateDiskGC", beta_on, NULL, &err) < 0) {
        CK_LOGE("feature gates: %s", err.msg);
        return ck_fg_gate_free(g);
    }
    return g;
}

struct file_config {
    json_t *root; /* the whole file */
};

/* Reads --config: a KubeletConfiguration. 0, or 2 after printing why. */
/* A quantity of bytes (containerLogMaxSize: "10Mi"); false when it is not one. */
static bool parse_bytes(const char *s, int64_t *ret)
{
    int64_t milli = 0;
    if (ck_quantity_milli(s, &milli) < 0)
        return false;
    *ret = milli >= 0 ? (milli + 999) / 1000 : -1;
    return true;
}

/* What the flags set, which the file does not override. */
struct flags_set {
    bool max_pods, log_max_size, log_max_files, log_monitor_interval;
    bool runtime_endpoint, image_endpoint, pod_cidr, cgroup_root;
    bool cluster_dns, cluster_domain, resolv_conf, sync_frequency;
    bool image_gc_high, image_gc_low, image_min_age;
};

/* The cluster DNS servers (--cluster-dns, clusterDNS): IP addresses, at most 8. */
struct dns_servers {
    const char *v[8];
    char text[8][INET6_ADDRSTRLEN];
    size_t n;
};

/* Adds an address; false when it is not an IP address or there are too many. */
static bool dns_servers_add(struct dns_servers *d, const char *ip, size_t len)
{
    unsigned char bin[16];
    if (d->n >= sizeof(d->v) / sizeof(d->v[0]) || len == 0 || len >= INET6_ADDRSTRLEN)
        return false;
    memcpy(d->text[d->n], ip, len);
    d->text[d->n][len] = '\0';
    if (inet_pton(AF_INET, d->text[d->n], bin) != 1 && inet_pton(AF_INET6, d->text[d->n], bin) != 1)
        return false;
    d->v[d->n] = d->text[d->n];
    d->n++;
    return true;
}

/* A comma-separated list of addresses; false when one is not an address. */
static bool dns_servers_parse(struct dns_servers *d, const char *list)
{
    d->n = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (!dns_servers_add(d, p, len))
            return false;
        p += len + (p[len] == ',');
    }
    return true;
}

/*
 * A string setting of the file (NULL when absent) into *field unless its flag was
 * given. 0, or 2 after printing why (not a string).
 */
static int file_string(const char *path, const json_t *root, const char *key, bool flag_set,
                       const char **field)
{
    const json_t *v = json_object_get(root, key);
    if (!v)
        return 0;
    if (!json_is_string(v)) {
        fprintf(stderr, "error: --config %s: %s must be a string\n", path, key);
        return 2;
    }
    if (!flag_set)
        *field = json_string_value(v); /* borrowed from root, kept until exit */
    return 0;
}

static int read_config(const char *path, struct ck_agent_config *config,
                       const struct flags_set *set, struct dns_servers *dns,
                       struct ck_fg_gate *gates, json_t **ret_root)
{
    size_t len = 0;
    char *text = NULL;
    struct ck_err err = {0};
    FILE *f = fopen(path, "re");
    if (f) {
        text = malloc(1 << 20);
        len = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
        fclose(f);
    }
    json_t *root = NULL;
    if (!text || ck__yaml_to_json(text, len, &root, &err) < 0 || !json_is_object(root)) {
        fprintf(stderr, "error: --config %s: %s\n", path, text ? err.msg : "cannot be read");
        free(text);
        json_decref(root);
        return 2;
    }
    free(text);
    const char *kind = json_string_value(json_object_get(root, "kind"));
    if (!kind || strcmp(kind, "KubeletConfiguration") != 0) {
        fprintf(stderr, "error: --config %s: kind must be KubeletConfiguration\n", path);
        json_decref(root);
        return 2;
    }
    json_t *mp = json_object_get(root, "maxPods");
    if (mp && !set->max_pods)
        config->max_pods = (int)json_integer_value(mp);
    const char *lms = json_string_value(json_object_get(root, "containerLogMaxSize"));
    if (lms && !set->log_max_size && !parse_bytes(lms, &config->container_log_max_size)) {
        fprintf(stderr, "error: --config %s: invalid containerLogMaxSize %s\n", path, lms);
        json_decref(root);
        return 2;
    }
    json_t *lmf = json_object_get(root, "containerLogMaxFiles");
    if (lmf && !set->log_max_files)
        config->container_log_max_files = (int)json_integer_value(lmf);
    const char *lmi = json_string_value(json_object_get(root, "containerLogMonitorInterval"));
    if (lmi && !set->log_monitor_interval &&
        (!ck_cmd_parse_duration(lmi, &config->container_log_monitor_interval) ||
         config->container_log_monitor_interval < 3 * CK_SEC)) {
        fprintf(stderr,
                "error: --config %s: invalid configuration: containerLogMonitorInterval must be "
                "a positive time duration greater than or equal to 3s\n",
                path);
        json_decref(root);
        return 2;
    }
    json_t *igh = json_object_get(root, "imageGCHighThresholdPercent");
    json_t *igl = json_object_get(root, "imageGCLowThresholdPercent");
    const char *ima = json_string_value(json_object_get(root, "imageMinimumGCAge"));
    if ((igh &&
         (!json_is_integer(igh) || json_integer_value(igh) < 0 || json_integer_value(igh) > 100)) ||
        (igl &&
         (!json_is_integer(igl) || json_integer_value(igl) < 0 || json_integer_value(igl) > 100))) {
        fprintf(stderr,
                "error: --config %s: imageGCHighThresholdPercent and "
                "imageGCLowThresholdPercent must be integers from 0 to 100\n",
                path);
        json_decref(root);
        return 2;
    }
    if (igh && !set->image_gc_high)
        config->image_gc_high_threshold = (int)json_integer_value(igh);
    if (igl && !set->image_gc_low)
        config->image_gc_low_threshold = (int)json_integer_value(igl);
    if (ima && !set->image_min_age && !ck_cmd_parse_duration(ima, &config->minimum_image_ttl)) {
        fprintf(stderr, "error: --config %s: invalid imageMinimumGCAge %s\n", path, ima);
        json_decref(root);
        return 2;
    }
    json_t *eh = json_object_get(root, "evictionHard");
    if (eh && !json_is_object(eh)) {
        fprintf(stderr, "error: --config %s: evictionHard must be a map\n", path);
        json_decref(root);
        return 2;
    }
    config->eviction_hard = eh; /* borrowed from root, kept until exit */
    if (file_string(path, root, "containerRuntimeEndpoint", set->runtime_endpoint,
                    &config->runtime_endpoint) ||
        file_string(path, root, "imageServiceEndpoint", set->image_endpoint,
                    &config->image_endpoint) ||
        file_string(path, root, "podCIDR", set->pod_cidr, &config->pod_cidr) ||
        file_string(path, root, "cgroupRoot", set->cgroup_root, &config->cgroup_root) ||
        file_string(path, root, "clusterDomain", set->cluster_domain, &config->cluster_domain) ||
        file_string(path, root, "resolvConf", set->resolv_conf, &config->resolv_conf)) {
        json_decref(root);
        return 2;
    }
    const json_t *cdns = json_object_get(root, "clusterDNS");
    if (cdns && !set->cluster_dns) {
        size_t i;
        const json_t *ip;
        dns->n = 0;
        bool ok = json_is_array(cdns);
        json_array_foreach(cdns, i, ip) ok =
            ok && json_is_string(ip) &&
            dns_servers_add(dns, json_string_value(ip), json_string_length(ip));
        if (!ok) {
            fprintf(stderr, "error: --config %s: clusterDNS must be a list of IP addresses\n",
                    path);
            json_decref(root);
            return 2;
        }
    }
    const char *sync = json_string_value(json_object_get(root, "syncFrequency"));
    if (sync && !set->sync_frequency &&
        (!ck_cmd_parse_duration(sync, &config->sync_frequency) || config->sync_frequency <= 0)) {
        fprintf(stderr, "error: --config %s: invalid syncFrequency\n", path);
        json_decref(root);
        return 2;
    }
    const char *freq = json_string_value(json_object_get(root, "nodeStatusUpdateFrequency"));
    if (freq && !ck_cmd_parse_duration(freq, &config->node_status_update_frequency)) {
        fprintf(stderr, "error: --config %s: invalid nodeStatusUpdateFrequency\n", path);
        json_decref(root);
        return 2;
    }
    json_t *fg = json_object_get(root, "featureGates");
    size_t n = json_object_size(fg), i = 0;
    struct ck_fg_pair *pairs = calloc(n ? n : 1, sizeof(*pairs));
    const char *k;
    json_t *v;
    json_object_foreach(fg, k, v)
    {
        pairs[i].name = k;
        pairs[i++].value = json_is_true(v);
    }
    struct ck_fg_err fgerr = {0};
    int r = n ? ck_fg_set_from_map(gates, pairs, n, &fgerr) : 0;
    free(pairs);
    if (r < 0) {
        fprintf(stderr, "error: --config %s: featureGates: %s\n", path, fgerr.msg);
        json_decref(root);
        return 2;
    }
    *ret_root = root;
    return 0;
}

struct starter {
    struct ck_agent *a;
    volatile sig_atomic_t stop;
};

static void *start_main(void *arg)
{
    struct starter *s = arg;
    while (!s->stop) {
        struct ck_err err = {0};
        if (ck_agent_run(s->a, &err) == 0) {
            CK_LOGI("Agent running");
            return NULL;
        }
        CK_LOGV(0, "agent: not started yet: %s", err.msg);
        struct timespec second = {1, 0};
        nanosleep(&second, NULL);
    }
    return NULL;
}

int ck_cmd_agent(int argc, char **argv)
{
    enum {
        O_KUBECONFIG = 300,
        O_NODE,
        O_ROOT,
        O_CONFIG,
        O_GATES,
        O_MAXPODS,
        O_POD_WORKERS,
        O_PORT,
        O_LOG_MAX_SIZE,
        O_LOG_MAX_FILES,
        O_NO_CGROUPS
    };
    enum { O_TLS_CERT = 400, O_TLS_KEY, O_CLIENT_CA, O_FORMAT };
    enum {
        O_RUNTIME = 500,
        O_RUNTIME_ENDPOINT,
        O_IMAGE_ENDPOINT,
        O_CNI_CONF,
        O_CNI_BIN,
        O_POD_CIDR,
        O_CGROUP_ROOT,
        O_CLUSTER_DNS,
        O_CLUSTER_DOMAIN,
        O_RESOLV_CONF,
        O_NODE_IP
    };
    enum {
        O_GC_PERIOD = 600,
        O_SYNC_FREQUENCY,
        O_GC_MIN_AGE,
        O_GC_MAX_PER_CONTAINER,
        O_GC_MAX,
        O_IMAGE_GC_HIGH,
        O_IMAGE_GC_LOW,
        O_IMAGE_MIN_AGE,
        O_LOG_MONITOR_INTERVAL,
        O_BOOTSTRAP_KUBECONFIG,
        O_CERT_DIR
    };
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"bootstrap-kubeconfig", required_argument, NULL, O_BOOTSTRAP_KUBECONFIG},
        {"cert-dir", required_argument, NULL, O_CERT_DIR},
        {"node-name", required_argument, NULL, O_NODE},
        {"root-dir", required_argument, NULL, O_ROOT},
        {"config", required_argument, NULL, O_CONFIG},
        {"feature-gates", required_argument, NULL, O_GATES},
        {"max-pods", required_argument, NULL, O_MAXPODS},
        {"pod-workers", required_argument, NULL, O_POD_WORKERS},
        {"port", required_argument, NULL, O_PORT},
        {"container-log-max-size", required_argument, NULL, O_LOG_MAX_SIZE},
        {"container-log-max-files", required_argument, NULL, O_LOG_MAX_FILES},
        {"container-log-monitor-interval", required_argument, NULL, O_LOG_MONITOR_INTERVAL},
        {"no-cgroups", no_argument, NULL, O_NO_CGROUPS},
        {"tls-cert-file", required_argument, NULL, O_TLS_CERT},
        {"tls-private-key-file", required_argument, NULL, O_TLS_KEY},
        {"client-ca-file", required_argument, NULL, O_CLIENT_CA},
        {"container-runtime", required_argument, NULL, O_RUNTIME},
        {"container-runtime-endpoint", required_argument, NULL, O_RUNTIME_ENDPOINT},
        {"image-service-endpoint", required_argument, NULL, O_IMAGE_ENDPOINT},
        {"cni-conf-dir", required_argument, NULL, O_CNI_CONF},
        {"cni-bin-dir", required_argument, NULL, O_CNI_BIN},
        {"pod-cidr", required_argument, NULL, O_POD_CIDR},
        {"cgroup-root", required_argument, NULL, O_CGROUP_ROOT},
        {"cluster-dns", required_argument, NULL, O_CLUSTER_DNS},
        {"cluster-domain", required_argument, NULL, O_CLUSTER_DOMAIN},
        {"resolv-conf", required_argument, NULL, O_RESOLV_CONF},
        {"node-ip", required_argument, NULL, O_NODE_IP},
        {"container-gc-period", required_argument, NULL, O_GC_PERIOD},
        {"sync-frequency", required_argument, NULL, O_SYNC_FREQUENCY},
        {"minimum-container-ttl-duration", required_argument, NULL, O_GC_MIN_AGE},
        {"maximum-dead-containers-per-container", required_argument, NULL, O_GC_MAX_PER_CONTAINER},
        {"maximum-dead-containers", required_argument, NULL, O_GC_MAX},
        {"image-gc-high-threshold", required_argument, NULL, O_IMAGE_GC_HIGH},
        {"image-gc-low-threshold", required_argument, NULL, O_IMAGE_GC_LOW},
        {"minimum-image-ttl-duration", required_argument, NULL, O_IMAGE_MIN_AGE},
        {"v", required_argument, NULL, 'v'},
        {"logging-format", required_argument, NULL, O_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct ck_agent_config config = {0};
    /* kubelet's GC policy defaults */
    config.gc_policy_set = true;
    config.max_dead_per_container = 1;
    config.max_dead_containers = -1;
    config.image_gc_high_threshold = 85;
    config.image_gc_low_threshold = 80;
    config.minimum_image_ttl = 120 * CK_SEC;
    const char *kubeconfig = NULL, *config_file = NULL, *gates_flag = NULL;
    const char *bootstrap_kubeconfig = NULL, *cert_dir = NULL;
    struct flags_set set = {0};
    static struct dns_servers dns; /* config borrows its addresses until exit */
    opterr = 0;
    optind = 1;
    int opt;
    char *end;
    while ((opt = getopt_long(argc, argv, ":v:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            fputs(usage, stdout);
            return 0;
        case O_KUBECONFIG:
            kubeconfig = optarg;
            break;
        case O_BOOTSTRAP_KUBECONFIG:
            bootstrap_kubeconfig = optarg;
            break;
        case O_CERT_DIR:
            cert_dir = optarg;
            break;
        case O_NODE:
            config.node_name = optarg;
            break;
        case O_ROOT:
            config.root_dir = optarg;
            break;
        case O_CONFIG:
            config_file = optarg;
            break;
        case O_GATES:
            gates_flag = optarg;
            break;
        case O_MAXPODS:
            config.max_pods = (int)strtol(optarg, &end, 10);
            if (!*optarg || *end || config.max_pods < 1 || config.max_pods > 10000)
                return usage_error("invalid value for --max-pods", optarg);
            set.max_pods = true;
            break;
        case O_POD_WORKERS:
            config.pod_workers = (int)strtol(optarg, &end, 10);
            if (!*optarg || *end || config.pod_workers < 1 ||
                config.pod_workers > CK_AGENT_POD_WORKERS_MAX)
                return usage_error("invalid value for --pod-workers", optarg);
            break;
        case O_PORT:
            config.port = (int)strtol(optarg, &end, 10);
            if (!*optarg || *end || config.port < 1 || config.port > 65535)
                return usage_error("invalid value for --port", optarg);
            break;
        case O_LOG_MAX_SIZE:
            if (!parse_bytes(optarg, &config.container_log_max_size))
                return usage_error("invalid value for --container-log-max-size", optarg);
            set.log_max_size = true;
            break;
        case O_LOG_MAX_FILES:
            config.container_log_max_files = (int)strtol(optarg, &end, 10);
            if (!*optarg || *end || config.container_log_max_files < 2)
                return usage_error("invalid value for --container-log-max-files", optarg);
            set.log_max_files = true;
            break;
        case O_LOG_MONITOR_INTERVAL:
            if (!ck_cmd_parse_duration(optarg, &config.container_log_monitor_interval) ||
                config.container_log_monitor_interval < 3 * CK_SEC)
                return usage_error("invalid value for --container-log-monitor-interval "
                                   "(a duration of at least 3s)",
                                   optarg);
            set.log_monitor_interval = true;
            break;
        case O_NO_CGROUPS:
            config.no_cgroups = true;
            break;
        case O_TLS_CERT:
            config.tls_cert_file = optarg;
            break;
        case O_TLS_KEY:
            config.tls_private_key_file = optarg;
            break;
        case O_CLIENT_CA:
            config.client_ca_file = optarg;
            break;
        case O_RUNTIME:
            if (strcmp(optarg, "cri") == 0)
                config.runtime = CK_AGENT_RUNTIME_CRI;
            else if (strcmp(optarg, "process") == 0)
                config.runtime = CK_AGENT_RUNTIME_PROCESS;
            else
                return usage_error("invalid value for --container-runtime (want cri or process)",
                                   optarg);
            break;
        case O_RUNTIME_ENDPOINT:
            config.runtime_endpoint = optarg;
            set.runtime_endpoint = true;
            break;
        case O_IMAGE_ENDPOINT:
            config.image_endpoint = optarg;
            set.image_endpoint = true;
            break;
        case O_CNI_CONF:
            config.cni_conf_dir = optarg;
            break;
        case O_CNI_BIN:
            config.cni_bin_dir = optarg;
            break;
        case O_POD_CIDR:
            config.pod_cidr = optarg;
            set.pod_cidr = true;
            break;
        case O_CGROUP_ROOT:
            if (optarg[0] != '/')
                return usage_error("--cgroup-root must be an absolute cgroup path", optarg);
            config.cgroup_root = optarg;
            set.cgroup_root = true;
            break;
        case O_CLUSTER_DNS:
            if (!dns_servers_parse(&dns, optarg))
                return usage_error("invalid value for --cluster-dns (want IP addresses, "
                                   "comma-separated, at most 8)",
                                   optarg);
            set.cluster_dns = true;
            break;
        case O_CLUSTER_DOMAIN:
            config.cluster_domain = optarg;
            set.cluster_domain = true;
            break;
        case O_RESOLV_CONF:
            config.resolv_conf = optarg;
            set.resolv_conf = true;
            break;
        case O_NODE_IP: {
            unsigned char bin[4];
            if (inet_pton(AF_INET, optarg, bin) != 1)
                return usage_error("invalid value for --node-ip (want an IPv4 address)", optarg);
            config.node_ip = optarg;
            break;
        }
        case O_SYNC_FREQUENCY:
            if (!ck_cmd_parse_duration(optarg, &config.sync_frequency) ||
                config.sync_frequency <= 0)
                return usage_error("invalid value for --sync-frequency", optarg);
            set.sync_frequency = true;
            break;
        case O_GC_PERIOD:
            if (!ck_cmd_parse_duration(optarg, &config.container_gc_period) ||
                config.container_gc_period < 0)
                return usage_error("invalid value for --container-gc-period", optarg);
            if (config.container_gc_period == 0)
                config.container_gc_period = -1; /* 0s: none */
            break;
        case O_GC_MIN_AGE:
            if (!ck_cmd_parse_duration(optarg, &config.minimum_container_ttl) ||
                config.minimum_container_ttl < 0)
                return usage_error("invalid value for --minimum-container-ttl-duration", optarg);
            break;
        case O_GC_MAX_PER_CONTAINER:
        case O_GC_MAX: {
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < -1 || v > 1000000)
                return usage_error(
                    opt == O_GC_MAX ? "invalid value for --maximum-dead-containers"
                                    : "invalid value for --maximum-dead-containers-per-container",
                    optarg);
            if (opt == O_GC_MAX)
                config.max_dead_containers = (int)v;
            else
                config.max_dead_per_container = (int)v;
            break;
        }
        case O_IMAGE_GC_HIGH:
        case O_IMAGE_GC_LOW: {
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < 0 || v > 100)
                return usage_error(opt == O_IMAGE_GC_HIGH
                                       ? "invalid value for --image-gc-high-threshold (0-100)"
                                       : "invalid value for --image-gc-low-threshold (0-100)",
                                   optarg);
            if (opt == O_IMAGE_GC_HIGH) {
                config.image_gc_high_threshold = (int)v;
                set.image_gc_high = true;
            } else {
                config.image_gc_low_threshold = (int)v;
                set.image_gc_low = true;
            }
            break;
        }
        case O_IMAGE_MIN_AGE:
            if (!ck_cmd_parse_duration(optarg, &config.minimum_image_ttl) ||
                config.minimum_image_ttl < 0)
                return usage_error("invalid value for --minimum-image-ttl-duration", optarg);
            set.image_min_age = true;
            break;
        case 'v':
        case O_FORMAT:
            if (ck_cmd_log_flag(opt == 'v', optarg))
                return usage_error(opt == 'v' ? "invalid value for -v"
                                              : "invalid value for --logging-format",
                                   optarg);
            break;
        case ':':
            return usage_error("flag needs an argument", argv[optind - 1]);
        default:
            return usage_error("unknown flag", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument", argv[optind]);
    if (!kubeconfig)
        return usage_error("--kubeconfig is required", NULL);
    if (!config.node_name)
        return usage_error("--node-name is required", NULL);
    if (!config.root_dir)
        return usage_error("--root-dir is required", NULL);
    if (!config.tls_cert_file != !config.tls_private_key_file)
        return usage_error("--tls-cert-file and --tls-private-key-file go together", NULL);

    struct ck_fg_gate *gates = agent_gates();
    if (!gates)
        return 1;
    json_t *file = NULL;
    if (config_file && read_config(config_file, &config, &set, &dns, gates, &file) != 0) {
        ck_fg_gate_free(gates);
        return 2;
    }
    if (config.image_gc_low_threshold >= config.image_gc_high_threshold) {
        /* kubelet's validation, over the file and the flags */
        fprintf(stderr,
                "error: imageGCLowThresholdPercent (--image-gc-low-threshold) %d must be less "
                "than imageGCHighThresholdPercent (--image-gc-high-threshold) %d\n",
                config.image_gc_low_threshold, config.image_gc_high_threshold);
        ck_fg_gate_free(gates);
        json_decref(file);
        return 2;
    }
    struct ck_fg_err fgerr = {0};
    if (gates_flag && ck_fg_set(gates, gates_flag, &fgerr) < 0) {
        ck_fg_gate_free(gates);
        json_decref(file);
        return usage_error("invalid value for --feature-gates", fgerr.msg);
    }
    char *effective = ck_fg_startup_line(gates);
    CK_LOGS(0, "Effective feature gates", "featureGates", effective ? effective : "");
    free(effective);
    if (config.runtime == CK_AGENT_RUNTIME_PROCESS)
        CK_LOGS(0, "Container runtime", "runtime", "process");
    else
        CK_LOGS(0, "Container runtime", "runtime", "cri", "endpoint",
                config.runtime_endpoint ? config.runtime_endpoint : CK_AGENT_RUNTIME_ENDPOINT,
                "imageEndpoint", config.image_endpoint ? config.image_endpoint : "", "cniConfDir",
                config.cni_conf_dir ? config.cni_conf_dir : CK_AGENT_CNI_CONF_DIR, "cniBinDir",
                config.cni_bin_dir ? config.cni_bin_dir : CK_AGENT_CNI_BIN_DIR, "podCIDR",
                config.pod_cidr ? config.pod_cidr : "");
    config.cluster_dns = dns.v;
    config.n_cluster_dns = dns.n;
    if (config.runtime == CK_AGENT_RUNTIME_CRI) {
        char servers[8 * (INET6_ADDRSTRLEN + 1)] = "";
        for (size_t i = 0; i < dns.n; i++)
            snprintf(servers + strlen(servers), sizeof(servers) - strlen(servers), "%s%s",
                     i ? "," : "", dns.v[i]);
        CK_LOGS(0, "Pod DNS", "clusterDNS", servers, "clusterDomain",
                config.cluster_domain ? config.cluster_domain : "", "resolvConf",
                config.resolv_conf ? config.resolv_conf : CK_AGENT_RESOLV_CONF);
        char period[32], ttl[32], per[16], max[16], high[16], low[16], age[32];
        snprintf(period, sizeof(period), "%gs",
                 (double)(config.container_gc_period ? config.container_gc_period : 60 * CK_SEC) /
                     1e9);
        snprintf(ttl, sizeof(ttl), "%gs", (double)config.minimum_container_ttl / 1e9);
        snprintf(per, sizeof(per), "%d", config.max_dead_per_container);
        snprintf(max, sizeof(max), "%d", config.max_dead_containers);
        snprintf(high, sizeof(high), "%d", config.image_gc_high_threshold);
        snprintf(low, sizeof(low), "%d", config.image_gc_low_threshold);
        snprintf(age, sizeof(age), "%gs", (double)config.minimum_image_ttl / 1e9);
        CK_LOGS(0, "Garbage collection", "containerGCPeriod",
                config.container_gc_period < 0 ? "never" : period, "minimumContainerTTLDuration",
                ttl, "maxPerPodContainer", per, "maxContainers", max, "imageGCHighThresholdPercent",
                high, "imageGCLowThresholdPercent", low, "imageMinimumGCAge", age);
    }

    sigset_t stop_signals;
    ck_cmd_block_stop_signals(&stop_signals);
    struct ck_err err = {0};
    if (bootstrap_kubeconfig) {
        char default_cert_dir[PATH_MAX];
        snprintf(default_cert_dir, sizeof(default_cert_dir), "%s/pki", config.root_dir);
        struct ck_agent_bootstrap b = {.bootstrap_kubeconfig = bootstrap_kubeconfig,
                                       .kubeconfig = kubeconfig,
                                       .cert_dir = cert_dir ? cert_dir : default_cert_dir,
                                       .node_name = config.node_name};
        if (ck_agent_bootstrap(&b, &err) < 0) {
            fprintf(stderr, "error: %s\n", err.msg);
            ck_fg_gate_free(gates);
            json_decref(file);
            return 1;
        }
    }
    struct ck_kubeconfig *kc = NULL;
    if (ck_kubeconfig_load(kubeconfig, NULL, &kc, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        ck_fg_gate_free(gates);
        json_decref(file);
        return 1;
    }
    struct ck_rest *client = NULL;
    int r = ck_rest_new_from_kubeconfig(kc, -1, 0, &client, &err);
    config.client = client;
    struct starter starter = {0};
    if (r == 0)
        r = ck_agent_new(&config, &starter.a, &err);
    pthread_t thread;
    if (r == 0 && pthread_create(&thread, NULL, start_main, &starter) != 0)
        r = ck_err_set(&err, CK_ENOMEM, "cannot start");
    if (r < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        ck_agent_free(starter.a);
        ck_rest_free(client);
        ck_kubeconfig_free(kc);
        ck_fg_gate_free(gates);
        json_decref(file);
        return r == CK_EINVAL ? 2 : 1;
    }
    int sig = 0;
    sigwait(&stop_signals, &sig);
    CK_LOGS(0, "Shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM");
    starter.stop = 1;
    pthread_join(thread, NULL);
    ck_agent_free(starter.a);
    ck_rest_free(client);
    ck_kubeconfig_free(kc);
    ck_fg_gate_free(gates);
    json_decref(file);
    return 0;
}
