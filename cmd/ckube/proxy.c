/*
 * proxy.c - `ckube proxy`: Service routing for this node through nftables, as kube-proxy
 * runs in its nftables mode beside the kubelet.
 *
 *   ckube proxy --kubeconfig FILE [--hostname-override NAME] [--cluster-cidr CIDR]
 *               [--masquerade-all] [--sync-period 30s] [--nodeport-addresses CIDRs]
 *               [--healthz-bind-address 0.0.0.0:10256]
 *               [--metrics-bind-address 127.0.0.1:10249] [--cleanup]
 *
 * Programs only the table "ip ckube-proxy" (libckube-proxy); leaves it in place on
 * exit, as kube-proxy does; --cleanup deletes it and exits. Exit codes as main.c's: 0
 * after SIGINT/SIGTERM, 1 runtime failure, 2 usage.
 */
#include <ctype.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckube/proxy.h"
#include "ckube/rest.h"
#include "controllers.h"
#include "proxy.h"

static const char usage[] =
    "Usage: ckube proxy --kubeconfig FILE [flags]\n"
    "\n"
    "Routes Service traffic on this node through nftables (the table ip ckube-proxy),\n"
    "from the Services and EndpointSlices of the server the kubeconfig names.\n"
    "\n"
    "Flags:\n"
    "      --kubeconfig FILE          kubeconfig of the server (required unless --cleanup)\n"
    "      --hostname-override NAME   the node's name (default: the host name)\n"
    "      --cluster-cidr CIDR        the pods' IPv4 range; traffic from outside it to a\n"
    "                                 ClusterIP is masqueraded\n"
    "      --masquerade-all[=BOOL]    masquerade all traffic to ClusterIPs (default false)\n"
    "      --network-policy[=BOOL]    enforce NetworkPolicies on this node's pods (the table\n"
    "                                 ip ckube-netpol; the kubeconfig's user must list and\n"
    "                                 watch NetworkPolicies, Pods and Namespaces) (default false)\n"
    "      --sync-period D            full resync period (default 30s)\n"
    "      --nodeport-addresses CIDRS NodePorts answer only on node addresses in these\n"
    "                                 comma-separated CIDRs (default: every local address)\n"
    "      --healthz-bind-address A   HOST:PORT of /healthz, \"\" for none (default 0.0.0.0:10256)\n"
    "      --metrics-bind-address A   HOST:PORT of /metrics, \"\" for none\n"
    "                                 (default 127.0.0.1:10249)\n"
    "      --cleanup                  delete the tables and exit\n"
    "  -v, --v N                      log verbosity (default 0)\n"
    "      --logging-format FORMAT    text (klog) or json (default text)\n"
    "  -h, --help                     print this help\n";

static int usage_error(const char *what, const char *value)
{
    fprintf(stderr, "error: %s%s%s\n\n%s", what, value ? ": " : "", value ? value : "", usage);
    return 2;
}

/* A boolean flag's value: none or "true" is true, "false" false; false when neither. */
static bool bool_flag(const char *arg, bool *ret)
{
    if (!arg || strcmp(arg, "true") == 0)
        *ret = true;
    else if (strcmp(arg, "false") == 0)
        *ret = false;
    else
        return false;
    return true;
}

int ck_cmd_proxy(int argc, char **argv)
{
    enum {
        O_KUBECONFIG = 300,
        O_HOSTNAME,
        O_CIDR,
        O_MASQ,
        O_NETPOL,
        O_SYNC,
        O_NODEPORT,
        O_HEALTHZ,
        O_METRICS,
        O_CLEANUP,
        O_FORMAT,
    };
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"hostname-override", required_argument, NULL, O_HOSTNAME},
        {"cluster-cidr", required_argument, NULL, O_CIDR},
        {"masquerade-all", optional_argument, NULL, O_MASQ},
        {"network-policy", optional_argument, NULL, O_NETPOL},
        {"sync-period", required_argument, NULL, O_SYNC},
        {"nodeport-addresses", required_argument, NULL, O_NODEPORT},
        {"healthz-bind-address", required_argument, NULL, O_HEALTHZ},
        {"metrics-bind-address", required_argument, NULL, O_METRICS},
        {"cleanup", no_argument, NULL, O_CLEANUP},
        {"v", required_argument, NULL, 'v'},
        {"logging-format", required_argument, NULL, O_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *kubeconfig = NULL;
    char hostname[256] = "";
    bool cleanup = false;
    struct ck_proxy_config cfg = {
        .sync_period = 30 * CK_SEC,
        .healthz_bind_address = "0.0.0.0:10256",
        .metrics_bind_address = "127.0.0.1:10249",
    };
    opterr = 0;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, ":v:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            fputs(usage, stdout);
            return 0;
        case O_KUBECONFIG:
            kubeconfig = optarg;
            break;
        case O_HOSTNAME:
            if (!*optarg || strlen(optarg) >= sizeof(hostname))
                return usage_error("invalid value for --hostname-override", optarg);
            snprintf(hostname, sizeof(hostname), "%s", optarg);
            break;
        case O_CIDR:
            cfg.cluster_cidr = optarg;
            break;
        case O_MASQ:
            if (!bool_flag(optarg, &cfg.masquerade_all))
                return usage_error("invalid value for --masquerade-all", optarg);
            break;
        case O_NETPOL:
            if (!bool_flag(optarg, &cfg.network_policy))
                return usage_error("invalid value for --network-policy", optarg);
            break;
        case O_SYNC:
            if (!ck_cmd_parse_duration(optarg, &cfg.sync_period) || cfg.sync_period <= 0)
                return usage_error("invalid duration for --sync-period", optarg);
            break;
        case O_NODEPORT:
            cfg.nodeport_addresses = optarg;
            break;
        case O_HEALTHZ:
            cfg.healthz_bind_address = optarg;
            break;
        case O_METRICS:
            cfg.metrics_bind_address = optarg;
            break;
        case O_CLEANUP:
            cleanup = true;
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
    struct ck_err err = {0};
    if (cleanup) {
        if (ck_proxy_cleanup(&err) < 0 || ck_netpol_cleanup(&err) < 0) {
            fprintf(stderr, "error: %s\n", err.msg);
            return 1;
        }
        return 0;
    }
    if (!kubeconfig)
        return usage_error("--kubeconfig is required", NULL);
    if (!*hostname) { /* kube-proxy: the lower-cased host name */
        if (gethostname(hostname, sizeof(hostname) - 1) != 0 || !*hostname) {
            fprintf(stderr, "error: cannot read the host name: give --hostname-override\n");
            return 1;
        }
        for (char *c = hostname; *c; c++)
            *c = (char)tolower((unsigned char)*c);
    }
    cfg.hostname = hostname;

    sigset_t stop_signals;
    ck_cmd_block_stop_signals(&stop_signals);
    struct ck_kubeconfig *kc = NULL;
    if (ck_kubeconfig_load(kubeconfig, NULL, &kc, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    struct ck_rest *client = NULL;
    struct ck_proxy *p = NULL;
    int r =
        ck_rest_new_from_kubeconfig(kc, CK_REST_DEFAULT_QPS, CK_REST_DEFAULT_BURST, &client, &err);
    if (r == 0)
        r = ck_proxy_new(&cfg, client, &p, &err);
    if (r == 0)
        r = ck_proxy_start(p, &err);
    if (r < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        ck_proxy_free(p);
        ck_rest_free(client);
        ck_kubeconfig_free(kc);
        return r == CK_EINVAL ? 2 : 1;
    }
    CK_LOGS(0, "Proxy starting", "server", kc->server, "hostname", hostname, "table",
            CK_PROXY_TABLE_FAMILY " " CK_PROXY_TABLE, "networkPolicy",
            cfg.network_policy ? "true" : "false");
    int sig = 0;
    sigwait(&stop_signals, &sig);
    CK_LOGS(0, "Shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM");
    ck_proxy_free(p);
    ck_rest_free(client);
    ck_kubeconfig_free(kc);
    return 0;
}
