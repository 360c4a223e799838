/*
 * main.c - the `ckube` command: flags, wiring and exit codes, nothing more.
 *
 *   ckube server [--listen 127.0.0.1:6443] [--data-dir ./ckube-data] [--store URL]
 *                [--feature-gates A=true,B=false ...] [--emulated-version 1.31]
 *                [--config FILE] [--controllers *] [--event-ttl 1h]
 *                [--node-monitor-grace-period 40s] [--leader-elect[=false]]
 *                [--resource-quota-sync-period 5m]
 *                [--cluster-cidr 10.244.0.0/16] [--node-cidr-mask-size 24]
 *                [--allocate-node-cidrs[=false]] [--advertise-address IP]
 *                [--service-cluster-ip-range 10.96.0.0/12] [--service-node-port-range 30000-32767]
 *                [--encryption-provider-config FILE]
 *                [--enable-admission-plugins A,B] [--disable-admission-plugins C,D]
 *                [--admission-control-config-file FILE]
 *                [--pki-dir DATA-DIR/pki] [TLS and authentication flags]
 *                [--disable-agent] [--disable-proxy] [--disable-network-policy]
 *                [--disable-dns] [--cluster-dns IP]
 *                [--cluster-domain cluster.local] [--node-name HOST] [--container-runtime
 * cri|process]
 *                [--container-runtime-endpoint URL] [--root-dir DATA-DIR/agent]  (node.c)
 *   ckube controller-manager --kubeconfig FILE [...]   (controllers.c)
 *   ckube scheduler --kubeconfig FILE [...]            (scheduler.c)
 *   ckube dns --kubeconfig FILE [...]                  (dns.c)
 *   ckube fake-nodes --kubeconfig FILE --count N [...] (fake_nodes.c)
 *   ckube agent --kubeconfig FILE --node-name NAME --root-dir DIR [...] (agent.c)
 *   ckube certs client --cn NAME [--org GROUP]... [...]  (certs.c)
 *   ckube version [-o text|json]
 *   ckube help
 *
 * Every subcommand but `certs client` takes the logging flags -v/--v N and
 * --logging-format text|json. Exit codes: 0 success, 1 runtime failure (port in use, cannot
 * write the data directory), 2 usage error (unknown flag, bad value), each
 * with one line on stderr; usage errors also print the usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "ckube/apiserver.h"
#include "ckube/internal/util.h"
#include "ckube/util.h"
#include "controllers.h"
#include "dnscmd.h"
#include "node.h"
#include "proxy.h"

#define EXIT_USAGE 2

static const char usage_text[] =
    "ckube is a small Kubernetes-compatible control plane.\n"
    "\n"
    "Usage:\n"
    "  ckube server [flags]    run the API server, the controllers and a node for this host\n"
    "  ckube controller-manager --kubeconfig FILE [flags]\n"
    "                          run the controllers against a server\n"
    "  ckube scheduler --kubeconfig FILE [flags]\n"
    "                          run the scheduler against a server\n"
    "  ckube dns --kubeconfig FILE [flags]\n"
    "                          serve the cluster's DNS names, forwarding the others\n"
    "  ckube proxy --kubeconfig FILE [flags]\n"
    "                          route Service traffic on this node through nftables\n"
    "  ckube fake-nodes --kubeconfig FILE --count N [flags]\n"
    "                          simulate N nodes that report their pods Running\n"
    "  ckube agent --kubeconfig FILE --node-name NAME --root-dir DIR [flags]\n"
    "                          run the pods bound to a node as local processes\n"
    "  ckube certs client --cn NAME [--org GROUP]... [flags]\n"
    "                          make a client certificate signed by the cluster CA\n"
    "  ckube version [flags]   print version information\n"
    "  ckube help              print this help\n"
    "\n"
    "Server flags:\n"
    "      --listen HOST:PORT        address to serve on (default 127.0.0.1:6443)\n"
    "      --data-dir DIR            where state and the kubeconfig live (default ./ckube-data)\n"
    "      --store URL               sqlite://PATH or etcd://HOST:PORT[,HOST:PORT...]\n"
    "                                (default sqlite://DATA-DIR/state.db)\n"
    "      --controllers LIST        controllers run in-process: * (all), NAME, -NAME;\n"
    "                                \"-*\" or \"\" for none (default *; known: ";
/* ...the known controllers, from the controller manager's table, then: */
static const char usage_tail[] =
    ")\n"
    "      --feature-gates A=true,B=false\n"
    "                                set feature gates (repeatable; the last value of a\n"
    "                                gate wins); AllAlpha=true and AllBeta=false apply to\n"
    "                                every gate of that stage not set by name\n"
    "      --emulated-version X.Y    behave as Kubernetes X.Y for feature gates (1.31 or 1.32)\n"
    "      --config FILE             a YAML file whose featureGates: map sets gates;\n"
    "                                --feature-gates overrides it per gate\n"
    "      --tls-cert-file FILE      serving certificate (default: DATA-DIR/pki/apiserver.crt,\n"
    "                                created at first start with the CA and admin certificate)\n"
    "      --tls-private-key-file FILE  its key\n"
    "      --client-ca-file FILE     CA client certificates are verified against\n"
    "                                (default: DATA-DIR/pki/ca.crt)\n"
    "      --tls-san NAME            an extra DNS name or IP of the serving certificate (repeatable)\n"
    "      --kubelet-client-certificate FILE  the client certificate shown to node agents\n"
    "                                (default: DATA-DIR/pki/apiserver-kubelet-client.crt)\n"
    "      --kubelet-client-key FILE its key\n"
    "      --kubelet-certificate-authority FILE  verifies the agents' serving certificates\n"
    "                                (default: not verified, as kube-apiserver)\n"
    "      --proxy-client-cert-file FILE  the client certificate shown to the servers of\n"
    "                                APIServices (default: DATA-DIR/pki/front-proxy-client.crt)\n"
    "      --proxy-client-key-file FILE  its key\n"
    "      --requestheader-client-ca-file FILE  a client certificate that verifies against it\n"
    "                                is a front proxy's, whose headers name the user\n"
    "                                (default, without it and --proxy-client-cert-file:\n"
    "                                DATA-DIR/pki/front-proxy-ca.crt with kubeadm's flags)\n"
    "      --requestheader-allowed-names A,B  the front proxies' common names (default: any)\n"
    "      --requestheader-username-headers H,...  headers naming the user, the first set wins\n"
    "                                (X-Remote-User is common, and the default front\n"
    "                                proxy's; none turns a given CA off)\n"
    "      --requestheader-group-headers H,...  headers naming groups (X-Remote-Group is\n"
    "                                suggested)\n"
    "      --requestheader-extra-headers-prefix P,...  header prefixes naming extra values\n"
    "                                (X-Remote-Extra- is suggested)\n"
    "      --token-auth-file FILE    bearer tokens, kube-apiserver's CSV: token,user,uid[,\"groups\"]\n"
    "      --service-account-key-file FILE  key ServiceAccount tokens are verified with\n"
    "                                (default: DATA-DIR/pki/sa.key)\n"
    "      --anonymous-auth BOOL     requests without credentials are system:anonymous\n"
    "                                (default true); false answers them 401\n"
    "      --enable-bootstrap-token-auth[=BOOL]\n"
    "                                bootstrap tokens (kube-system Secrets\n"
    "                                bootstrap-token-ID) authenticate as\n"
    "                                system:bootstrap:ID (default false)\n"
    "      --insecure-plain-http     serve plain HTTP without authentication or authorization,\n"
    "                                on loopback only (tests and benchmarks)\n"
    "      --event-ttl DURATION      how long events are kept after their last activity,\n"
    "                                e.g. 90s, 30m, 1h30m; 0 keeps them (default 1h)\n"
    "      --max-connections N       open connections in all (default 10000)\n"
    "      --max-requests-inflight N  with --max-mutating-requests-inflight, the requests\n"
    "                                API Priority and Fairness lets run at once, shared by\n"
    "                                the limited priority levels (default 400)\n"
    "      --max-mutating-requests-inflight N  (default 200)\n"
    "      --enable-priority-and-fairness[=BOOL]  API Priority and Fairness (default true);\n"
    "                                false: --max-requests-inflight and\n"
    "                                --max-mutating-requests-inflight limit reads and\n"
    "                                writes apart, answering 429 past them\n"
    "      --max-connections-per-address N  open connections of one client address\n"
    "                                (default 2000)\n"
    "      --request-header-timeout DURATION  time a connection has to send a complete\n"
    "                                request header, in whole seconds (default 32s); the\n"
    "                                body gets twice that\n"
    "      --node-monitor-grace-period DURATION\n"
    "                                how long a node's lease may go unrenewed before the\n"
    "                                node is Unknown and tainted (default 40s)\n"
    "      --resource-quota-sync-period DURATION\n"
    "                                between full recounts of each ResourceQuota's usage\n"
    "                                (default 5m)\n"
    "      --cluster-signing-cert-file FILE\n"
    "                                the CA the csrsigning controller signs\n"
    "                                CertificateSigningRequests with (default: the\n"
    "                                server's own, PKI-DIR/ca.crt)\n"
    "      --cluster-signing-key-file FILE\n"
    "                                its key (default PKI-DIR/ca.key)\n"
    "      --cluster-signing-duration DURATION\n"
    "                                validity of the certificates it signs (default 8760h,\n"
    "                                shortened by a request's expirationSeconds)\n"
    "      --watch-history-events N  SQLite store: events of watch history kept in memory\n"
    "                                (default 16384); older ones are read from the database\n"
    "      --watch-history-bytes N   SQLite store: bytes of objects that history may hold\n"
    "                                (default 67108864, 64 MiB)\n"
    "      --advertise-address IP    the IPv4 address the kubernetes Service's endpoints\n"
    "                                list for this server (default: the --listen host if\n"
    "                                it is a non-loopback address, else the host's first\n"
    "                                non-loopback IPv4 address)\n"
    "      --service-cluster-ip-range CIDR  the IPv4 range Services' cluster IPs come from\n"
    "                                (default 10.96.0.0/12)\n"
    "      --service-node-port-range FIRST-LAST  the node ports of NodePort and LoadBalancer\n"
    "                                Services (default 30000-32767)\n"
    "      --encryption-provider-config FILE  encrypts the resources it names in the store\n"
    "                                (an EncryptionConfiguration: aesgcm, secretbox, identity)\n"
    "      --enable-admission-plugins A,B  admission plugins to run besides the default ones\n"
    "                                (repeatable; docs/admission.md lists them)\n"
    "      --disable-admission-plugins A,B  default admission plugins not to run (repeatable)\n"
    "      --admission-control-config-file FILE  the plugins' configurations (an\n"
    "                                AdmissionConfiguration: PodSecurity's defaults, exemptions)\n"
    "      --pki-dir DIR             the CA, ServiceAccount key and certificates; servers of\n"
    "                                one cluster share its ca.crt, ca.key and sa.key\n"
    "                                (default DATA-DIR/pki)\n"
    "      --leader-elect[=BOOL]     run the in-process controllers (Lease\n"
    "                                kube-system/kube-controller-manager) and scheduler\n"
    "                                (kube-scheduler) only while holding their Lease, so that\n"
    "                                servers sharing a store run one set (default true)\n"
    "      --disable-agent           run no node: no agent, no containerd (default: a node\n"
    "                                for this host, run in-process as k3s server does)\n"
    "      --disable-proxy           no Service routing (the proxy, nftables) for the node\n"
    "      --disable-network-policy  do not enforce NetworkPolicies on the node's pods\n"
    "                                (default: enforced by its proxy with the in-process\n"
    "                                controllers' caches, as k3s's network policy controller)\n"
    "      --disable-dns             run no cluster DNS (default: one on the advertise\n"
    "                                address, port 53, behind the kube-dns Service)\n"
    "      --cluster-dns IP          the kube-dns Service's address, which pods use\n"
    "                                (default: the 10th of --service-cluster-ip-range)\n"
    "      --cluster-domain NAME     the cluster's DNS domain (default cluster.local)\n"
    "      --node-name NAME          the node's name (default: the host name, lowercased)\n"
    "      --container-runtime cri|process  how the node runs containers (default cri):\n"
    "                                cri through containerd; process runs pods' commands on\n"
    "                                this host as the server's user, NOT ISOLATED\n"
    "      --container-runtime-endpoint URL  a running CRI runtime, unix:///PATH (default:\n"
    "                                a containerd of the server's own, started from PATH,\n"
    "                                with everything under DATA-DIR/containerd)\n"
    "      --image-service-endpoint URL  the CRI image service (default: the runtime's)\n"
    "      --root-dir DIR            the node's pods, logs and CNI configuration\n"
    "                                (default DATA-DIR/agent)\n"
    "      --agent-port N            the node's HTTPS port for logs and exec (default 10250)\n";
/* ...the in-process controllers' --concurrent-NAME-syncs flags, then: */
static const char usage_end[] =
    "\n"
    "Version flags:\n"
    "  -o, --output text|json        output format (default text)\n"
    "\n"
    "Flags of every command (certs client takes only -h):\n"
    "  -v, --v N                     log verbosity (default 0)\n"
    "      --logging-format FORMAT   text (klog) or json (default text)\n"
    "  -h, --help                    print this help\n";

static void usage(FILE *f)
{
    char known[CK_CONTROLLER_MANAGER_KNOWN_SIZE];
    fputs(usage_text, f);
    fputs(ck_controller_manager_known(known, sizeof(known)), f);
    fputs(usage_tail, f);
    ck_cmd_syncs_usage(f);
    ck_cmd_node_ipam_usage(f);
    fputs(ck_cmd_hpa_usage, f);
    fputs(usage_end, f);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n\n", stderr);
    usage(stderr);
    return EXIT_USAGE;
}

enum {
    OPT_LOGGING_FORMAT = 256,
    OPT_LISTEN,
    OPT_DATA_DIR,
    OPT_STORE,
    OPT_CONTROLLERS,
    OPT_FEATURE_GATES,
    OPT_EMULATED_VERSION,
    OPT_CONFIG,
    OPT_TLS_CERT_FILE,
    OPT_TLS_KEY_FILE,
    OPT_KUBELET_CLIENT_CERT,
    OPT_KUBELET_CLIENT_KEY,
    OPT_KUBELET_CA,
    OPT_PROXY_CLIENT_CERT,
    OPT_PROXY_CLIENT_KEY,
    OPT_RH_CLIENT_CA,
    OPT_RH_ALLOWED_NAMES,
    OPT_RH_USERNAME_HEADERS,
    OPT_RH_GROUP_HEADERS,
    OPT_RH_EXTRA_PREFIX,
    OPT_CLIENT_CA_FILE,
    OPT_TLS_SAN,
    OPT_TOKEN_AUTH_FILE,
    OPT_SA_KEY_FILE,
    OPT_ANONYMOUS_AUTH,
    OPT_INSECURE_PLAIN_HTTP,
    OPT_EVENT_TTL,
    OPT_MAX_CONNECTIONS,
    OPT_MAX_REQUESTS_INFLIGHT,
    OPT_MAX_MUTATING_REQUESTS_INFLIGHT,
    OPT_MAX_CONNECTIONS_PER_ADDRESS,
    OPT_REQUEST_HEADER_TIMEOUT,
    OPT_NODE_GRACE,
    OPT_QUOTA_SYNC,
    OPT_SIGNING_CERT,
    OPT_BOOTSTRAP_TOKEN_AUTH,
    OPT_PRIORITY_AND_FAIRNESS,
    OPT_SIGNING_KEY,
    OPT_SIGNING_DURATION,
    OPT_CLUSTER_CIDR,
    OPT_ADVERTISE_ADDRESS,
    OPT_NODE_CIDR_MASK_SIZE,
    OPT_ALLOCATE_NODE_CIDRS,
    OPT_WATCH_HISTORY_EVENTS,
    OPT_WATCH_HISTORY_BYTES,
    OPT_SERVICE_CLUSTER_IP_RANGE,
    OPT_SERVICE_NODE_PORT_RANGE,
    OPT_ENCRYPTION_PROVIDER_CONFIG,
    OPT_ADMISSION_CONTROL_CONFIG_FILE,
    OPT_ENABLE_ADMISSION_PLUGINS,
    OPT_DISABLE_ADMISSION_PLUGINS,
    OPT_PKI_DIR,
    OPT_LEADER_ELECT,
    OPT_DISABLE_AGENT,
    OPT_NODE_NAME,
    OPT_CONTAINER_RUNTIME,
    OPT_RUNTIME_ENDPOINT,
    OPT_IMAGE_ENDPOINT,
    OPT_ROOT_DIR,
    OPT_AGENT_PORT,
    OPT_DISABLE_PROXY,
    OPT_DISABLE_NETWORK_POLICY,
    OPT_DISABLE_DNS,
    OPT_CLUSTER_DNS,
    OPT_CLUSTER_DOMAIN,
    OPT_HPA,          /* the --horizontal-pod-autoscaler-* flags: OPT_HPA, OPT_HPA + 1, ... */
    OPT_SYNCS = 1000, /* the --concurrent-NAME-syncs flags: 1000, 1001, ... */
};

#define MAX_FEATURE_GATE_FLAGS 64
#define MAX_TLS_SANS           64

struct options {
    const char *listen;
    const char *data_dir;
    const char *store;
    const char *output;
    const char *feature_gates[MAX_FEATURE_GATE_FLAGS];
    size_t n_feature_gates;
    const char *emulated_version;
    const char *config;
    const char *controllers;
    const char *tls_cert_file;
    const char *tls_key_file;
    const char *client_ca_file;
    const char *kubelet_client_cert, *kubelet_client_key, *kubelet_ca;
    const char *proxy_client_cert, *proxy_client_key;
    const char *rh_client_ca, *rh_allowed_names, *rh_username_headers, *rh_group_headers,
        *rh_extra_prefix;
    const char *tls_sans[MAX_TLS_SANS];
    size_t n_tls_sans;
    const char *token_auth_file;
    const char *sa_key_file;
    bool anonymous_auth_disabled;
    bool bootstrap_token_auth;
    bool no_priority_and_fairness; /* --enable-priority-and-fairness=false */
    bool insecure_plain_http;
    const char *event_ttl;
    const char *max_connections;
    const char *max_requests_inflight, *max_mutating_requests_inflight;
    const char *max_connections_per_address;
    const char *request_header_timeout;
    const char *node_grace;
    const char *quota_sync;
    const char *hpa[CK_CMD_HPA_FLAGS]; /* the --horizontal-pod-autoscaler-* values */
    const char *signing_cert, *signing_key, *signing_duration;
    struct ck_cmd_node_ipam ipam;
    const char *service_cluster_ip_range;
    const char *advertise_address;
    const char *service_node_port_range;
    const char *encryption_provider_config;
    const char *admission_control_config_file;
    char enable_admission[1024], disable_admission[1024]; /* the flags' lists, joined */
    const char *pki_dir;
    bool leader_elect_disabled;
    struct ck_cmd_syncs *syncs; /* the --concurrent-NAME-syncs flags, NULL: not taken */
    const char *watch_history_events;
    const char *watch_history_bytes;
    struct ck_cmd_node_options node;
    const char *agent_port;
    struct ck_cmd_cluster_dns_options dns;
};

/*
 * Checks the value of -v (verbosity) or --logging-format and applies it.
 * NULL, or what a valid value looks like, for the usage error.
 */
const char *ck_cmd_log_flag(bool verbosity, const char *arg)
{
    if (verbosity) {
        char *end;
        long level = strtol(arg, &end, 10);
        if (*arg == '\0' || *end != '\0' || level < 0 || level > INT_MAX)
            return "want a number >= 0";
        ck_log_set_verbosity((int)level);
        return NULL;
    }
    enum ck_log_format format;
    if (ck_log_parse_format(arg, &format) < 0)
        return "want text or json";
    ck_log_set_format(format);
    return NULL;
}

static int common_flag(int opt, const char *arg)
{
    if (opt != 'v' && opt != OPT_LOGGING_FORMAT)
        return EXIT_USAGE;
    const char *why = ck_cmd_log_flag(opt == 'v', arg);
    if (why)
        return usage_error("invalid value \"%s\" for %s: %s", arg,
                           opt == 'v' ? "-v" : "--logging-format", why);
    return 0;
}

/* Parses argv (argv[0] being the subcommand) into opts. Returns -1, or an exit code. */
static int parse_flags(int argc, char **argv, const struct option *longopts, const char *shortopts,
                       struct options *opts)
{
    opterr = 0;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            usage(stdout);
            return 0;
        case 'o':
            opts->output = optarg;
            break;
        case OPT_LISTEN:
            opts->listen = optarg;
            break;
        case OPT_DATA_DIR:
            opts->data_dir = optarg;
            break;
        case OPT_STORE:
            opts->store = optarg;
            break;
        case OPT_CONTROLLERS:
            opts->controllers = optarg;
            break;
        case OPT_FEATURE_GATES:
            if (opts->n_feature_gates == MAX_FEATURE_GATE_FLAGS)
                return usage_error("too many --feature-gates flags (at most %d)",
                                   MAX_FEATURE_GATE_FLAGS);
            opts->feature_gates[opts->n_feature_gates++] = optarg;
            break;
        case OPT_EMULATED_VERSION:
            opts->emulated_version = optarg;
            break;
        case OPT_CONFIG:
            opts->config = optarg;
            break;
        case OPT_TLS_CERT_FILE:
            opts->tls_cert_file = optarg;
            break;
        case OPT_TLS_KEY_FILE:
            opts->tls_key_file = optarg;
            break;
        case OPT_CLIENT_CA_FILE:
            opts->client_ca_file = optarg;
            break;
        case OPT_KUBELET_CLIENT_CERT:
            opts->kubelet_client_cert = optarg;
            break;
        case OPT_KUBELET_CLIENT_KEY:
            opts->kubelet_client_key = optarg;
            break;
        case OPT_KUBELET_CA:
            opts->kubelet_ca = optarg;
            break;
        case OPT_PROXY_CLIENT_CERT:
            opts->proxy_client_cert = optarg;
            break;
        case OPT_PROXY_CLIENT_KEY:
            opts->proxy_client_key = optarg;
            break;
        case OPT_RH_CLIENT_CA:
            opts->rh_client_ca = optarg;
            break;
        case OPT_RH_ALLOWED_NAMES:
            opts->rh_allowed_names = optarg;
            break;
        case OPT_RH_USERNAME_HEADERS:
            opts->rh_username_headers = optarg;
            break;
        case OPT_RH_GROUP_HEADERS:
            opts->rh_group_headers = optarg;
            break;
        case OPT_RH_EXTRA_PREFIX:
            opts->rh_extra_prefix = optarg;
            break;
        case OPT_TLS_SAN:
            if (opts->n_tls_sans == MAX_TLS_SANS)
                return usage_error("too many --tls-san flags (at most %d)", MAX_TLS_SANS);
            opts->tls_sans[opts->n_tls_sans++] = optarg;
            break;
        case OPT_TOKEN_AUTH_FILE:
            opts->token_auth_file = optarg;
            break;
        case OPT_SA_KEY_FILE:
            opts->sa_key_file = optarg;
            break;
        case OPT_ANONYMOUS_AUTH:
            if (strcmp(optarg, "true") == 0)
                opts->anonymous_auth_disabled = false;
            else if (strcmp(optarg, "false") == 0)
                opts->anonymous_auth_disabled = true;
            else
                return usage_error("invalid value \"%s\" for --anonymous-auth: want true or false",
                                   optarg);
            break;
        case OPT_INSECURE_PLAIN_HTTP:
            opts->insecure_plain_http = true;
            break;
        case OPT_EVENT_TTL:
            opts->event_ttl = optarg;
            break;
        case OPT_MAX_CONNECTIONS:
            opts->max_connections = optarg;
            break;
        case OPT_MAX_REQUESTS_INFLIGHT:
            opts->max_requests_inflight = optarg;
            break;
        case OPT_MAX_MUTATING_REQUESTS_INFLIGHT:
            opts->max_mutating_requests_inflight = optarg;
            break;
        case OPT_MAX_CONNECTIONS_PER_ADDRESS:
            opts->max_connections_per_address = optarg;
            break;
        case OPT_REQUEST_HEADER_TIMEOUT:
            opts->request_header_timeout = optarg;
            break;
        case OPT_NODE_GRACE:
            opts->node_grace = optarg;
            break;
        case OPT_QUOTA_SYNC:
            opts->quota_sync = optarg;
            break;
        case OPT_HPA:
        case OPT_HPA + 1:
        case OPT_HPA + 2:
        case OPT_HPA + 3:
        case OPT_HPA + 4:
            opts->hpa[opt - OPT_HPA] = optarg;
            break;
        case OPT_SIGNING_CERT:
            opts->signing_cert = optarg;
            break;
        case OPT_PRIORITY_AND_FAIRNESS:
            if (optarg && strcmp(optarg, "true") != 0 && strcmp(optarg, "false") != 0)
                return usage_error("invalid value \"%s\" for --enable-priority-and-fairness: "
                                   "want true or false",
                                   optarg);
            opts->no_priority_and_fairness = optarg && strcmp(optarg, "false") == 0;
            break;
        case OPT_BOOTSTRAP_TOKEN_AUTH:
            if (!optarg || strcmp(optarg, "true") == 0)
                opts->bootstrap_token_auth = true;
            else if (strcmp(optarg, "false") == 0)
                opts->bootstrap_token_auth = false;
            else
                return usage_error("invalid value \"%s\" for --enable-bootstrap-token-auth: want "
                                   "true or false",
                                   optarg);
            break;
        case OPT_SIGNING_KEY:
            opts->signing_key = optarg;
            break;
        case OPT_SIGNING_DURATION:
            opts->signing_duration = optarg;
            break;
        case OPT_CLUSTER_CIDR:
            opts->ipam.cluster_cidr = optarg;
            break;
        case OPT_ADVERTISE_ADDRESS:
            opts->advertise_address = optarg;
            break;
        case OPT_NODE_CIDR_MASK_SIZE:
            opts->ipam.mask_size = optarg;
            break;
        case OPT_ALLOCATE_NODE_CIDRS:
            opts->ipam.allocate = optarg ? optarg : "true";
            break;
        case OPT_WATCH_HISTORY_EVENTS:
            opts->watch_history_events = optarg;
            break;
        case OPT_WATCH_HISTORY_BYTES:
            opts->watch_history_bytes = optarg;
            break;
        case OPT_SERVICE_CLUSTER_IP_RANGE:
            opts->service_cluster_ip_range = optarg;
            break;
        case OPT_SERVICE_NODE_PORT_RANGE:
            opts->service_node_port_range = optarg;
            break;
        case OPT_ENCRYPTION_PROVIDER_CONFIG:
            opts->encryption_provider_config = optarg;
            break;
        case OPT_ADMISSION_CONTROL_CONFIG_FILE:
            opts->admission_control_config_file = optarg;
            break;
        case OPT_ENABLE_ADMISSION_PLUGINS:
        case OPT_DISABLE_ADMISSION_PLUGINS: {
            /* a string slice, as kube-apiserver's: each use adds to the list */
            char *list = opt == OPT_ENABLE_ADMISSION_PLUGINS ? opts->enable_admission
                                                             : opts->disable_admission;
            size_t used = strlen(list);
            if (used + strlen(optarg) + 2 > sizeof(opts->enable_admission))
                return usage_error("too many admission plugins named");
            snprintf(list + used, sizeof(opts->enable_admission) - used, "%s%s", used ? "," : "",
                     optarg);
            break;
        }
        case OPT_PKI_DIR:
            opts->pki_dir = optarg;
            break;
        case OPT_LEADER_ELECT:
            if (optarg && strcmp(optarg, "true") != 0 && strcmp(optarg, "false") != 0)
                return usage_error("invalid value \"%s\" for --leader-elect: want true or false",
                                   optarg);
            opts->leader_elect_disabled = optarg && strcmp(optarg, "false") == 0;
            break;
        case OPT_DISABLE_AGENT:
            opts->node.disabled = true;
            break;
        case OPT_NODE_NAME:
            opts->node.node_name = optarg;
            break;
        case OPT_CONTAINER_RUNTIME:
            opts->node.runtime = optarg;
            break;
        case OPT_RUNTIME_ENDPOINT:
            opts->node.runtime_endpoint = optarg;
            break;
        case OPT_IMAGE_ENDPOINT:
            opts->node.image_endpoint = optarg;
            break;
        case OPT_ROOT_DIR:
            opts->node.root_dir = optarg;
            break;
        case OPT_AGENT_PORT:
            opts->agent_port = optarg;
            break;
        case OPT_DISABLE_PROXY:
            opts->node.disable_proxy = true;
            break;
        case OPT_DISABLE_NETWORK_POLICY:
            opts->node.disable_network_policy = true;
            break;
        case OPT_DISABLE_DNS:
            opts->dns.disabled = true;
            break;
        case OPT_CLUSTER_DNS:
            opts->dns.service_ip = optarg;
            break;
        case OPT_CLUSTER_DOMAIN:
            opts->dns.cluster_domain = optarg;
            break;
        case ':':
            return usage_error("flag needs an argument: %s", argv[optind - 1]);
        case '?':
            return usage_error("unknown flag: %s", argv[optind - 1]);
        default: {
            char why[160];
            int handled =
                opts->syncs ? ck_cmd_syncs_flag(opts->syncs, opt, optarg, why, sizeof(why)) : 0;
            if (handled < 0)
                return usage_error("%s", why);
            int r = handled ? 0 : common_flag(opt, optarg);
            if (r != 0)
                return r;
        }
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument: %s", argv[optind]);
    return -1;
}

static int cmd_version(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"v", required_argument, NULL, 'v'},
        {"logging-format", required_argument, NULL, OPT_LOGGING_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct options opts = {.output = "text"};
    int r = parse_flags(argc, argv, longopts, ":o:v:h", &opts);
    if (r >= 0)
        return r;

    if (strcmp(opts.output, "json") == 0) {
        char *json = ck_version_json(true);
        if (!json) {
            fputs("error: out of memory\n", stderr);
            return 1;
        }
        puts(json);
        free(json);
        return 0;
    }
    if (strcmp(opts.output, "text") != 0)
        return usage_error("invalid value \"%s\" for --output: want text or json", opts.output);
    const struct ck_version_info *v = ck_version();
    printf("ckube %s\n", ck_version_release());
    printf("major: %s\nminor: %s\ngitVersion: %s\ngitCommit: %s\ngitTreeState: %s\n"
           "buildDate: %s\ncompiler: %s\nplatform: %s\n",
           v->major, v->minor, v->git_version, v->git_commit, v->git_tree_state, v->build_date,
           v->compiler, v->platform);
    return 0;
}

/* mkdir -p for one level of nesting we need: the data directory itself. */
static int ensure_dir(const char *path)
{
    if (mkdir(path, 0700) == 0 || errno == EEXIST) {
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            return 0;
        errno = ENOTDIR;
    }
    return -1;
}

/* A whole number from 1 to 1000000 (a connection count). */
static bool parse_count(const char *s, unsigned *ret)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno || v < 1 || v > 1000000)
        return false;
    *ret = (unsigned)v;
    return true;
}

/*
 * A count flag's value, when given: false (and *ret_exit the usage error's exit code)
 * when it is not a number from 1 to 1000000.
 */
static bool count_flag(const char *value, const char *flag, unsigned *ret, int *ret_exit)
{
    if (!value || parse_count(value, ret))
        return true;
    *ret_exit =
        usage_error("invalid value \"%s\" for --%s: want a number from 1 to 1000000", value, flag);
    return false;
}

void ck_cmd_block_stop_signals(sigset_t *ret_set)
{
    /* Block the stop signals before any thread starts, so only sigwait() sees them. */
    sigemptyset(ret_set);
    sigaddset(ret_set, SIGINT);
    sigaddset(ret_set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, ret_set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/*
 * The server's feature gate from --emulated-version, --config's featureGates
 * and --feature-gates (flags win per gate, as in Kubernetes). Returns -1 with
 * *ret set, or an exit code: 2 for a bad flag value, 1 for a bad config file.
 */
static int build_feature_gates(const struct options *opts, struct ck_fg_gate **ret)
{
    struct ck_fg_version emulated;
    struct ck_fg_err fgerr = {0};
    if (opts->emulated_version &&
        ck_fg_emulated_version_parse(opts->emulated_version, &emulated, &fgerr) < 0)
        return usage_error("invalid value \"%s\" for --emulated-version: %s",
                           opts->emulated_version, fgerr.msg);
    struct ck_err err = {0};
    if (ck_apiserver_feature_gate_new(opts->emulated_version ? &emulated : NULL, ret, &err) < 0) {
        if (err.code == CK_EINVAL)
            return usage_error("invalid value \"%s\" for --emulated-version: %s",
                               opts->emulated_version, err.msg);
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    /* a bad flag is a usage error; check the flags alone first, on a copy */
    struct ck_fg_gate *trial = ck_fg_copy(*ret, false);
    int r = trial ? ck_fg_apply_sources(trial, opts->feature_gates, opts->n_feature_gates, NULL,
                                        false, &fgerr)
                  : CK_FG_ENOMEM;
    ck_fg_gate_free(trial);
    if (r == 0)
        r = ck_fg_apply_sources(*ret, opts->feature_gates, opts->n_feature_gates, opts->config,
                                false, &fgerr);
    else if (r != CK_FG_ENOMEM) {
        *ret = ck_fg_gate_free(*ret);
        return usage_error("invalid argument for --feature-gates: %s", fgerr.msg);
    }
    if (r < 0) {
        *ret = ck_fg_gate_free(*ret);
        fprintf(stderr, "error: %s\n", r == CK_FG_ENOMEM ? "out of memory" : fgerr.msg);
        return 1;
    }
    ck_fg_close(*ret);
    return -1;
}

/*
 * Lifts the soft open-file limit to the hard one, as every Go program
 * (kube-apiserver included) does at start: each connection and each watch
 * is a descriptor, and the usual soft limit of 1024 would stop a server with
 * 1,000 watchers from accepting anything else.
 */
static void raise_open_file_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/*
 * A duration as Go's time.ParseDuration reads it, without a sign: "0", or numbers (with
 * an optional fraction) each followed by a unit ns, us (or µs), ms, s, m, h: "90s",
 * "1h30m", "1.5h". Sets *ret in nanoseconds; false for anything else or an overflow.
 */
bool ck_cmd_parse_duration(const char *s, int64_t *ret)
{
    static const struct {
        const char *unit;
        double ns;
    } units[] = {{"ns", 1},  {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"ms", 1e6},
                 {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
    if (strcmp(s, "0") == 0) {
        *ret = 0;
        return true;
    }
    double total = 0;
    if (!*s)
        return false;
    while (*s) {
        const char *start = s;
        double v = 0, scale = 1;
        bool digits = false, fraction = false;
        for (; (*s >= '0' && *s <= '9') || (*s == '.' && !fraction); s++) {
            if (*s == '.') {
                fraction = true;
                continue;
            }
            digits = true;
            if (fraction)
                v += (scale /= 10) * (*s - '0');
            else
                v = v * 10 + (*s - '0');
        }
        if (!digits || s == start)
            return false;
        size_t best = 0, len = 0;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            size_t n = strlen(units[i].unit);
            if (strncmp(s, units[i].unit, n) == 0 && n > len) {
                best = i;
                len = n;
            }
        }
        if (!len)
            return false;
        total += v * units[best].ns;
        s += len;
    }
    if (total > 9.2e18)
        return false;
    *ret = (int64_t)total;
    return true;
}

/*
 * The server's leader-election identity, "host_<uuid>", kept in DATA-DIR/leader-identity
 * so that a restarted server takes its own unexpired Leases back at once instead of
 * waiting out their lease duration. 0, or -1 with errno.
 */
static int server_identity(const char *data_dir, char *buf, size_t size)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/leader-identity", data_dir);
    char *old = NULL;
    size_t len = 0;
    if (ck__read_file(path, size - 1, &old, &len) == 0 && len > 0 && !memchr(old, '\n', len) &&
        strlen(old) == len) {
        snprintf(buf, size, "%s", old);
        free(old);
        return 0;
    }
    free(old);
    ck_cmd_election_identity(buf, size);
    int r = ck__write_file_atomic(path, buf, strlen(buf), 0600);
    if (r < 0) {
        errno = -r;
        return -1;
    }
    return 0;
}

static int cmd_server(int argc, char **argv)
{
    static const struct option fixed[] = {
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"data-dir", required_argument, NULL, OPT_DATA_DIR},
        {"store", required_argument, NULL, OPT_STORE},
        {"controllers", required_argument, NULL, OPT_CONTROLLERS},
        {"feature-gates", required_argument, NULL, OPT_FEATURE_GATES},
        {"emulated-version", required_argument, NULL, OPT_EMULATED_VERSION},
        {"config", required_argument, NULL, OPT_CONFIG},
        {"tls-cert-file", required_argument, NULL, OPT_TLS_CERT_FILE},
        {"tls-private-key-file", required_argument, NULL, OPT_TLS_KEY_FILE},
        {"client-ca-file", required_argument, NULL, OPT_CLIENT_CA_FILE},
        {"kubelet-client-certificate", required_argument, NULL, OPT_KUBELET_CLIENT_CERT},
        {"kubelet-client-key", required_argument, NULL, OPT_KUBELET_CLIENT_KEY},
        {"kubelet-certificate-authority", required_argument, NULL, OPT_KUBELET_CA},
        {"proxy-client-cert-file", required_argument, NULL, OPT_PROXY_CLIENT_CERT},
        {"proxy-client-key-file", required_argument, NULL, OPT_PROXY_CLIENT_KEY},
        {"requestheader-client-ca-file", required_argument, NULL, OPT_RH_CLIENT_CA},
        {"requestheader-allowed-names", required_argument, NULL, OPT_RH_ALLOWED_NAMES},
        {"requestheader-username-headers", required_argument, NULL, OPT_RH_USERNAME_HEADERS},
        {"requestheader-group-headers", required_argument, NULL, OPT_RH_GROUP_HEADERS},
        {"requestheader-extra-headers-prefix", required_argument, NULL, OPT_RH_EXTRA_PREFIX},
        {"tls-san", required_argument, NULL, OPT_TLS_SAN},
        {"token-auth-file", required_argument, NULL, OPT_TOKEN_AUTH_FILE},
        {"service-account-key-file", required_argument, NULL, OPT_SA_KEY_FILE},
        {"anonymous-auth", required_argument, NULL, OPT_ANONYMOUS_AUTH},
        {"enable-bootstrap-token-auth", optional_argument, NULL, OPT_BOOTSTRAP_TOKEN_AUTH},
        {"enable-priority-and-fairness", optional_argument, NULL, OPT_PRIORITY_AND_FAIRNESS},
        {"insecure-plain-http", no_argument, NULL, OPT_INSECURE_PLAIN_HTTP},
        {"event-ttl", required_argument, NULL, OPT_EVENT_TTL},
        {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
        {"max-requests-inflight", required_argument, NULL, OPT_MAX_REQUESTS_INFLIGHT},
        {"max-mutating-requests-inflight", required_argument, NULL,
         OPT_MAX_MUTATING_REQUESTS_INFLIGHT},
        {"max-connections-per-address", required_argument, NULL, OPT_MAX_CONNECTIONS_PER_ADDRESS},
        {"request-header-timeout", required_argument, NULL, OPT_REQUEST_HEADER_TIMEOUT},
        {"node-monitor-grace-period", required_argument, NULL, OPT_NODE_GRACE},
        {"resource-quota-sync-period", required_argument, NULL, OPT_QUOTA_SYNC},
        {"horizontal-pod-autoscaler-sync-period", required_argument, NULL, OPT_HPA},
        {"horizontal-pod-autoscaler-tolerance", required_argument, NULL, OPT_HPA + 1},
        {"horizontal-pod-autoscaler-downscale-stabilization", required_argument, NULL, OPT_HPA + 2},
        {"horizontal-pod-autoscaler-cpu-initialization-period", required_argument, NULL,
         OPT_HPA + 3},
        {"horizontal-pod-autoscaler-initial-readiness-delay", required_argument, NULL, OPT_HPA + 4},
        {"cluster-signing-cert-file", required_argument, NULL, OPT_SIGNING_CERT},
        {"cluster-signing-key-file", required_argument, NULL, OPT_SIGNING_KEY},
        {"cluster-signing-duration", required_argument, NULL, OPT_SIGNING_DURATION},
        {"cluster-cidr", required_argument, NULL, OPT_CLUSTER_CIDR},
        {"advertise-address", required_argument, NULL, OPT_ADVERTISE_ADDRESS},
        {"node-cidr-mask-size", required_argument, NULL, OPT_NODE_CIDR_MASK_SIZE},
        {"allocate-node-cidrs", optional_argument, NULL, OPT_ALLOCATE_NODE_CIDRS},
        {"watch-history-events", required_argument, NULL, OPT_WATCH_HISTORY_EVENTS},
        {"watch-history-bytes", required_argument, NULL, OPT_WATCH_HISTORY_BYTES},
        {"service-cluster-ip-range", required_argument, NULL, OPT_SERVICE_CLUSTER_IP_RANGE},
        {"service-node-port-range", required_argument, NULL, OPT_SERVICE_NODE_PORT_RANGE},
        {"encryption-provider-config", required_argument, NULL, OPT_ENCRYPTION_PROVIDER_CONFIG},
        {"admission-control-config-file", required_argument, NULL,
         OPT_ADMISSION_CONTROL_CONFIG_FILE},
        {"enable-admission-plugins", required_argument, NULL, OPT_ENABLE_ADMISSION_PLUGINS},
        {"disable-admission-plugins", required_argument, NULL, OPT_DISABLE_ADMISSION_PLUGINS},
        {"pki-dir", required_argument, NULL, OPT_PKI_DIR},
        {"leader-elect", optional_argument, NULL, OPT_LEADER_ELECT},
        {"disable-agent", no_argument, NULL, OPT_DISABLE_AGENT},
        {"disable-proxy", no_argument, NULL, OPT_DISABLE_PROXY},
        {"disable-network-policy", no_argument, NULL, OPT_DISABLE_NETWORK_POLICY},
        {"disable-dns", no_argument, NULL, OPT_DISABLE_DNS},
        {"cluster-dns", required_argument, NULL, OPT_CLUSTER_DNS},
        {"cluster-domain", required_argument, NULL, OPT_CLUSTER_DOMAIN},
        {"node-name", required_argument, NULL, OPT_NODE_NAME},
        {"container-runtime", required_argument, NULL, OPT_CONTAINER_RUNTIME},
        {"container-runtime-endpoint", required_argument, NULL, OPT_RUNTIME_ENDPOINT},
        {"image-service-endpoint", required_argument, NULL, OPT_IMAGE_ENDPOINT},
        {"root-dir", required_argument, NULL, OPT_ROOT_DIR},
        {"agent-port", required_argument, NULL, OPT_AGENT_PORT},
        {"v", required_argument, NULL, 'v'},
        {"logging-format", required_argument, NULL, OPT_LOGGING_FORMAT},
        {"help", no_argument, NULL, 'h'},
    };
    enum { N_FIXED = sizeof(fixed) / sizeof(fixed[0]) };
    struct option longopts[N_FIXED + CK_CMD_MAX_SYNCS + 1] = {0};
    memcpy(longopts, fixed, sizeof(fixed));
    static struct ck_cmd_syncs syncs; /* longopts point at its flag names */
    ck_cmd_syncs_init(&syncs, OPT_SYNCS, longopts + N_FIXED);
    struct options opts = {.listen = CK_APISERVER_DEFAULT_LISTEN,
                           .data_dir = "./ckube-data",
                           .controllers = "*",
                           .syncs = &syncs};
    int r = parse_flags(argc, argv, longopts, ":v:h", &opts);
    if (r >= 0)
        return r;
    bool no_controllers = !*opts.controllers || strcmp(opts.controllers, "-*") == 0;
    struct ck_err cerr = {0};
    if (!no_controllers && ck_controller_manager_check(opts.controllers, &cerr) < 0)
        return usage_error("invalid value \"%s\" for --controllers: %s", opts.controllers,
                           cerr.msg);
    struct in_addr advertise;
    if (opts.advertise_address && inet_pton(AF_INET, opts.advertise_address, &advertise) != 1)
        return usage_error("invalid value \"%s\" for --advertise-address: want an IPv4 address",
                           opts.advertise_address);
    char ipam_why[320];
    if (!no_controllers &&
        ck_cmd_node_ipam_check(&opts.ipam, opts.controllers, ipam_why, sizeof(ipam_why)) < 0)
        return usage_error("%s", ipam_why);
    int64_t node_grace = 0; /* the node lifecycle controller's default, 40 s */
    if (opts.node_grace && (!ck_cmd_parse_duration(opts.node_grace, &node_grace) || !node_grace))
        return usage_error("invalid value \"%s\" for --node-monitor-grace-period: want a "
                           "duration such as 40s",
                           opts.node_grace);
    int64_t quota_sync = 0; /* the resourcequota controller's default, 5 minutes */
    if (opts.quota_sync &&
        (!ck_cmd_parse_duration(opts.quota_sync, &quota_sync) || quota_sync <= 0))
        return usage_error("invalid value \"%s\" for --resource-quota-sync-period: want a "
                           "duration such as 5m",
                           opts.quota_sync);
    struct ck_hpa_options hpa = {0}; /* the autoscaler controller's defaults */
    for (int i = 0; i < CK_CMD_HPA_FLAGS; i++)
        if (opts.hpa[i] && !ck_cmd_hpa_flag(i, opts.hpa[i], &hpa))
            return usage_error("invalid value \"%s\" for --%s", opts.hpa[i],
                               ck_cmd_hpa_flag_names[i]);
    struct ck_cmd_signing signing = {opts.signing_cert, opts.signing_key, 0};
    if (opts.signing_duration && ck_cmd_signing_duration(&signing, opts.signing_duration) < 0)
        return usage_error("invalid value \"%s\" for --cluster-signing-duration: want a "
                           "duration such as 8760h",
                           opts.signing_duration);
    int64_t event_ttl = 0; /* the server's default, one hour */
    if (opts.event_ttl) {
        if (!ck_cmd_parse_duration(opts.event_ttl, &event_ttl))
            return usage_error("invalid value \"%s\" for --event-ttl: want a duration such as "
                               "90s, 30m or 1h",
                               opts.event_ttl);
        if (event_ttl == 0)
            event_ttl = -1; /* 0: events never expire, as kube-apiserver attaches no lease */
    }

    unsigned max_connections = 0, max_per_address = 0, header_timeout = 0; /* 0: defaults */
    unsigned max_inflight = 0, max_mutating_inflight = 0;
    int bad = 0;
    if (!count_flag(opts.max_connections, "max-connections", &max_connections, &bad) ||
        !count_flag(opts.max_connections_per_address, "max-connections-per-address",
                    &max_per_address, &bad) ||
        !count_flag(opts.max_requests_inflight, "max-requests-inflight", &max_inflight, &bad) ||
        !count_flag(opts.max_mutating_requests_inflight, "max-mutating-requests-inflight",
                    &max_mutating_inflight, &bad))
        return bad;
    if (opts.request_header_timeout) {
        int64_t ns = 0;
        if (!ck_cmd_parse_duration(opts.request_header_timeout, &ns) || ns < 1000000000LL ||
            ns > 3600 * 1000000000LL)
            return usage_error("invalid value \"%s\" for --request-header-timeout: want a "
                               "duration from 1s to 1h, such as 10s",
                               opts.request_header_timeout);
        header_timeout = (unsigned)((ns + 999999999LL) / 1000000000LL);
    }

    if (opts.insecure_plain_http && (opts.tls_cert_file || opts.client_ca_file ||
                                     opts.token_auth_file || opts.n_tls_sans || opts.rh_client_ca))
        return usage_error("--insecure-plain-http cannot be combined with TLS or token flags");
    if (!opts.tls_cert_file != !opts.tls_key_file)
        return usage_error("--tls-cert-file and --tls-private-key-file go together");
    static char dns_ip[64];
    if (!opts.dns.service_ip) {
        if (ck_cmd_cluster_dns_ip(opts.service_cluster_ip_range ? opts.service_cluster_ip_range
                                                                : "10.96.0.0/12",
                                  dns_ip, sizeof(dns_ip)) == 0)
            opts.dns.service_ip = dns_ip;
        else if (!opts.dns.disabled)
            return usage_error("--service-cluster-ip-range %s leaves no tenth address for the "
                               "cluster DNS: pass --cluster-dns or --disable-dns",
                               opts.service_cluster_ip_range);
    } else {
        struct in_addr a;
        if (inet_pton(AF_INET, opts.dns.service_ip, &a) != 1)
            return usage_error("invalid value \"%s\" for --cluster-dns: want an IPv4 address",
                               opts.dns.service_ip);
    }
    const char *node_why = ck_cmd_node_check(&opts.node);
    if (node_why)
        return usage_error("%s", node_why);
    if (opts.agent_port) {
        char *end;
        long port = strtol(opts.agent_port, &end, 10);
        if (!*opts.agent_port || *end || port < 1 || port > 65535)
            return usage_error("invalid value \"%s\" for --agent-port: want 1 to 65535",
                               opts.agent_port);
        opts.node.port = (int)port;
    }

    if (ensure_dir(opts.data_dir) < 0) {
        fprintf(stderr, "error: cannot use data directory %s: %s\n", opts.data_dir,
                strerror(errno));
        return 1;
    }
    /* it holds keys and the store: nobody else may plant or swap files in it */
    int dir_r = ck__check_private_dir(opts.data_dir);
    if (dir_r == -EPERM) {
        fprintf(stderr,
                "error: refusing data directory %s: it must be owned by this user and writable "
                "by nobody else (chmod go-w)\n",
                opts.data_dir);
        return 1;
    }
    if (dir_r < 0) {
        fprintf(stderr, "error: cannot use data directory %s: %s\n", opts.data_dir,
                strerror(-dir_r));
        return 1;
    }

    /* before the server is ready, so that it is there once the kubeconfig is */
    char identity[320];
    struct ck_cmd_server_election election = {.enabled = !opts.leader_elect_disabled,
                                              .identity = identity};
    if (!no_controllers && election.enabled &&
        server_identity(opts.data_dir, identity, sizeof(identity)) < 0) {
        fprintf(stderr, "error: cannot keep the leader-election identity in %s: %s\n",
                opts.data_dir, strerror(errno));
        return 1;
    }

    sigset_t stop_signals;
    ck_cmd_block_stop_signals(&stop_signals);
    raise_open_file_limit();
    ck__memory_setup();

    char default_store[PATH_MAX + 16];
    if (!opts.store) {
        snprintf(default_store, sizeof(default_store), "sqlite://%s/state.db", opts.data_dir);
        opts.store = default_store;
    } else if (strncmp(opts.store, "sqlite://", 9) != 0 && strncmp(opts.store, "etcd://", 7) != 0) {
        return usage_error(
            "invalid value \"%s\" for --store: want sqlite://PATH or etcd://HOST:PORT[,...]",
            opts.store);
    }

    /* the store takes its watch history bounds as connection string options */
    char store_url[PATH_MAX + 128];
    if (opts.watch_history_events || opts.watch_history_bytes) {
        const char *values[] = {opts.watch_history_events, opts.watch_history_bytes};
        const char *names[] = {"watch-history-events", "watch-history-bytes"};
        for (size_t i = 0; i < 2; i++)
            if (values[i] && (values[i][strspn(values[i], "0123456789")] || !*values[i] ||
                              strlen(values[i]) > 18 || strtoull(values[i], NULL, 10) == 0))
                return usage_error("invalid value \"%s\" for --%s: want a number > 0", values[i],
                                   names[i]);
        if (strncmp(opts.store, "sqlite://", 9) != 0)
            return usage_error("--watch-history-events and --watch-history-bytes apply to the "
                               "SQLite store only");
        snprintf(store_url, sizeof(store_url), "%s%s%s%s%s%s%s", opts.store,
                 strchr(opts.store, '?') ? "&" : "?",
                 opts.watch_history_events ? "watch-history-events=" : "",
                 opts.watch_history_events ? opts.watch_history_events : "",
                 opts.watch_history_events && opts.watch_history_bytes ? "&" : "",
                 opts.watch_history_bytes ? "watch-history-bytes=" : "",
                 opts.watch_history_bytes ? opts.watch_history_bytes : "");
        opts.store = store_url;
    }

    struct ck_fg_gate *gates = NULL;
    r = build_feature_gates(&opts, &gates);
    if (r >= 0)
        return r;

    struct ck_err err = {0};
    struct ck_apiserver *server;
    char pki_dir[PATH_MAX];
    snprintf(pki_dir, sizeof(pki_dir), "%s/pki", opts.data_dir);
    if (opts.pki_dir)
        snprintf(pki_dir, sizeof(pki_dir), "%s", opts.pki_dir);
    struct ck_apiserver_config config = {
        .listen = opts.listen,
        .store_url = opts.store,
        .feature_gates = gates,
        .metrics_text = ck_cmd_informer_census_metrics,
        .pki_dir = opts.insecure_plain_http ? NULL : pki_dir,
        .tls_cert_file = opts.tls_cert_file,
        .tls_private_key_file = opts.tls_key_file,
        .client_ca_file = opts.client_ca_file,
        .kubelet_client_certificate = opts.kubelet_client_cert,
        .kubelet_client_key = opts.kubelet_client_key,
        .kubelet_certificate_authority = opts.kubelet_ca,
        .tls_sans = opts.tls_sans,
        .n_tls_sans = opts.n_tls_sans,
        .token_auth_file = opts.token_auth_file,
        .service_account_key_file = opts.sa_key_file,
        .anonymous_auth_disabled = opts.anonymous_auth_disabled,
        .enable_bootstrap_token_auth = opts.bootstrap_token_auth,
        .disable_priority_and_fairness = opts.no_priority_and_fairness,
        .event_ttl = event_ttl,
        .max_connections = max_connections,
        .max_requests_inflight = max_inflight,
        .max_mutating_requests_inflight = max_mutating_inflight,
        .max_connections_per_address = max_per_address,
        .request_header_timeout = header_timeout,
        .service_cluster_ip_range = opts.service_cluster_ip_range,
        .advertise_address = opts.advertise_address,
        .endpoint_reconciler = true,
        .aggregator = true,
        .proxy_client_cert_file = opts.proxy_client_cert,
        .proxy_client_key_file = opts.proxy_client_key,
        .requestheader_client_ca_file = opts.rh_client_ca,
        .requestheader_allowed_names = opts.rh_allowed_names,
        .requestheader_username_headers = opts.rh_username_headers,
        .requestheader_group_headers = opts.rh_group_headers,
        .requestheader_extra_headers_prefix = opts.rh_extra_prefix,
        .front_proxy_pki = !opts.rh_client_ca && !opts.proxy_client_cert,
        .local_storage_class = true,
        .enable_admission_plugins = opts.enable_admission,
        .disable_admission_plugins = opts.disable_admission,
        .service_node_port_range = opts.service_node_port_range,
        .encryption_provider_config = opts.encryption_provider_config,
        .admission_control_config_file = opts.admission_control_config_file,
    };
    if (ck_apiserver_start(&config, &server, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        ck_fg_gate_free(gates);
        return 1;
    }

    char kubeconfig[PATH_MAX];
    char *abs_dir = realpath(opts.data_dir, NULL);
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", abs_dir ? abs_dir : opts.data_dir);
    free(abs_dir);
    if (ck_apiserver_write_kubeconfig(server, kubeconfig, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        ck_apiserver_free(server);
        ck_fg_gate_free(gates);
        return 1;
    }

    CK_LOGS(0, "Serving", "address", ck_apiserver_url(server), "store", opts.store, "version",
            ck_version()->git_version, "allocator", ck__memory_allocator());
    /* csrsigning signs with the server's own CA unless told otherwise */
    char ca_crt[PATH_MAX + 8], ca_key[PATH_MAX + 8];
    snprintf(ca_crt, sizeof(ca_crt), "%s/ca.crt", pki_dir);
    snprintf(ca_key, sizeof(ca_key), "%s/ca.key", pki_dir);
    if (!signing.cert_file && !signing.key_file && !opts.insecure_plain_http &&
        !opts.client_ca_file && access(ca_key, R_OK) == 0) {
        signing.cert_file = ca_crt;
        signing.key_file = ca_key;
    }
    struct ck_cmd_controllers controllers = {0};
    if (!no_controllers &&
        ck_cmd_controllers_start(server, opts.ipam.selection, &syncs, node_grace, quota_sync, &hpa,
                                 &election, &opts.ipam, &signing, &controllers) < 0) {
        ck_apiserver_free(server);
        ck_fg_gate_free(gates);
        return 1;
    }
    opts.node.data_dir = opts.data_dir;
    opts.node.pki_dir = opts.insecure_plain_http ? NULL : pki_dir;
    opts.node.own_kubelet_client = opts.kubelet_client_cert != NULL;
    /* the proxy and the DNS server read the controllers' caches when they run here */
    opts.dns.factory = controllers.factory;
    opts.node.factory = controllers.factory;
    struct ck_cmd_cluster_dns *dns = NULL;
    if (ck_cmd_cluster_dns_start(server, &opts.dns, &dns) < 0) {
        ck_cmd_controllers_stop(&controllers);
        ck_apiserver_free(server);
        ck_fg_gate_free(gates);
        return 1;
    }
    opts.node.node_ip = ck_apiserver_advertise_address(server);
    opts.node.cluster_cidr = opts.ipam.cluster_cidr ? opts.ipam.cluster_cidr : "10.244.0.0/16";
    opts.node.cluster_dns = dns ? opts.dns.service_ip : NULL;
    opts.node.cluster_domain = opts.dns.cluster_domain ? opts.dns.cluster_domain : "cluster.local";
    struct ck_cmd_node *node = NULL;
    if (ck_cmd_node_start(server, &opts.node, &node) < 0) {
        ck_cmd_cluster_dns_stop(dns);
        ck_cmd_controllers_stop(&controllers);
        ck_apiserver_free(server);
        ck_fg_gate_free(gates);
        return 1;
    }
    printf("export KUBECONFIG=%s\n", kubeconfig);
    fflush(stdout);

    int sig = 0;
    sigwait(&stop_signals, &sig);
    CK_LOGS(0, "Shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM");
    ck_cmd_node_stop(node); /* before the server: the agent's last writes reach it */
    ck_cmd_cluster_dns_stop(dns);
    ck_apiserver_begin_shutdown(server);
    ck_cmd_controllers_stop(&controllers);
    ck_apiserver_free(server);
    ck_fg_gate_free(gates);
    CK_LOGS(0, "Stopped cleanly", "address", opts.listen);
    return 0;
}

int main(int argc, char **argv)
{
    /*
     * jansson allocates through ck__malloc, so that the JSON readers notice when one of
     * its allocations failed (jansson's parser does not always say so): see lib/api/json.c.
     * Set before the first JSON value exists, as jansson requires.
     */
    json_set_alloc_funcs(ck__malloc, free);
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *command = argv[1];
    if (strcmp(command, "help") == 0 || strcmp(command, "--help") == 0 ||
        strcmp(command, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(command, "version") == 0 || strcmp(command, "--version") == 0)
        return cmd_version(argc - 1, argv + 1);
    if (strcmp(command, "server") == 0)
        return cmd_server(argc - 1, argv + 1);
    if (strcmp(command, "controller-manager") == 0)
        return ck_cmd_controller_manager(argc - 1, argv + 1);
    if (strcmp(command, "scheduler") == 0)
        return ck_cmd_scheduler(argc - 1, argv + 1);
    if (strcmp(command, "dns") == 0)
        return ck_cmd_dns(argc - 1, argv + 1);
    if (strcmp(command, "proxy") == 0)
        return ck_cmd_proxy(argc - 1, argv + 1);
    if (strcmp(command, "agent") == 0)
        return ck_cmd_agent(argc - 1, argv + 1);
    if (strcmp(command, "fake-nodes") == 0)
        return ck_cmd_fake_nodes(argc - 1, argv + 1);
    if (strcmp(command, "certs") == 0)
        return ck_cmd_certs(argc - 1, argv + 1);
    if (command[0] == '-')
        return usage_error("unknown flag: %s (flags go after the command)", command);
    return usage_error("unknown command: %s", command);
}
