/*
 * dns.c - `ckube dns`: the cluster DNS server in a process of its own, as CoreDNS runs
 * beside the API server in kube-system (lib/dns; docs/internals/dns.md).
 *
 *   ckube dns --kubeconfig FILE [--listen 10.96.0.10:53] [--cluster-domain cluster.local]
 *             [--resolv-conf /etc/resolv.conf] [--ttl 30] [--max-tcp-clients 64] [-v N]
 *
 * Exit codes as main.c's: 0 after SIGINT/SIGTERM, 1 runtime failure (cannot listen, no
 * kubeconfig, no nameserver), 2 usage.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/client.h"
#include "ckube/dns.h"
#include "ckube/internal/util.h"
#include "controllers.h"
#include "dnscmd.h"

static const char usage[] =
    "Usage: ckube dns --kubeconfig FILE [flags]\n"
    "\n"
    "Serves the cluster's DNS names (Services, pods, reverse names) from the API server\n"
    "the kubeconfig names, and forwards every other name to the resolv.conf's servers.\n"
    "\n"
    "Flags:\n"
    "      --kubeconfig FILE          kubeconfig of the server (required)\n"
    "      --listen ADDR:PORT         UDP and TCP address (default 10.96.0.10:53)\n"
    "      --cluster-domain DOMAIN    the cluster's domain (default cluster.local)\n"
    "      --resolv-conf FILE         where the upstream servers are (default /etc/resolv.conf)\n"
    "      --ttl SECONDS              TTL of the answered records, 1-3600 (default 30)\n"
    "      --max-tcp-clients N        TCP connections served at once (default 64)\n"
    "  -v, --v N                      log verbosity (default 0)\n"
    "      --logging-format FORMAT    text (klog) or json (default text)\n"
    "  -h, --help                     print this help\n";

static int usage_error(const char *what, const char *value)
{
    fprintf(stderr, "error: %s%s%s\n\n%s", what, value ? ": " : "", value ? value : "", usage);
    return 2;
}

static bool parse_uint(const char *arg, long min, long max, long *ret)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || v < min || v > max)
        return false;
    *ret = v;
    return true;
}

int ck_cmd_dns(int argc, char **argv)
{
    enum { O_KUBECONFIG = 300, O_LISTEN, O_DOMAIN, O_RESOLV, O_TTL, O_TCP, O_FORMAT };
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"listen", required_argument, NULL, O_LISTEN},
        {"cluster-domain", required_argument, NULL, O_DOMAIN},
        {"resolv-conf", required_argument, NULL, O_RESOLV},
        {"ttl", required_argument, NULL, O_TTL},
        {"max-tcp-clients", required_argument, NULL, O_TCP},
        {"v", required_argument, NULL, 'v'},
        {"logging-format", required_argument, NULL, O_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *kubeconfig = NULL;
    struct ck_dns_config config = {0};
    long ttl = CK_DNS_DEFAULT_TTL, tcp = CK_DNS_DEFAULT_TCP_CLIENTS;
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
        case O_LISTEN:
            config.listen = optarg;
            break;
        case O_DOMAIN:
            config.cluster_domain = optarg;
            break;
        case O_RESOLV:
            config.resolv_conf = optarg;
            break;
        case O_TTL:
            /* CoreDNS's kubernetes plugin takes 0 to 3600; 0 is not offered here */
            if (!parse_uint(optarg, 1, 3600, &ttl))
                return usage_error("invalid value for --ttl", optarg);
            break;
        case O_TCP:
            if (!parse_uint(optarg, 1, 100000, &tcp))
                return usage_error("invalid value for --max-tcp-clients", optarg);
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
    config.ttl = (uint32_t)ttl;
    config.max_tcp_clients = (int)tcp;

    sigset_t stop_signals;
    ck_cmd_block_stop_signals(&stop_signals);
    struct ck_err err = {0};
    struct ck_kubeconfig *kc = NULL;
    if (ck_kubeconfig_load(kubeconfig, NULL, &kc, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    struct ck_rest *client = NULL;
    struct ck_dns *dns = NULL;
    int r = ck_rest_new_from_kubeconfig(kc, 50, 100, &client, &err);
    config.client = client;
    if (r == 0)
        r = ck_dns_new(&config, &dns, &err);
    if (r == 0)
        r = ck_dns_start(dns, &err);
    if (r < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        ck_dns_free(dns);
        ck_rest_free(client);
        ck_kubeconfig_free(kc);
        return 1;
    }
    char port[8];
    snprintf(port, sizeof(port), "%u", (unsigned)ck_dns_port(dns));
    CK_LOGS(0, "DNS server starting", "server", kc->server, "listen",
            config.listen ? config.listen : CK_DNS_DEFAULT_LISTEN, "port", port, "clusterDomain",
            config.cluster_domain ? config.cluster_domain : CK_DNS_DEFAULT_DOMAIN);
    int sig = 0;
    sigwait(&stop_signals, &sig);
    CK_LOGS(0, "Shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM");
    ck_dns_free(dns);
    ck_rest_free(client);
    ck_kubeconfig_free(kc);
    return 0;
}
