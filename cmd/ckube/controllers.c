/*
 * controllers.c - the controller side of the `ckube` command: the in-process controllers
 * of `ckube server` and the `ckube controller-manager` subcommand.
 *
 *   ckube controller-manager --kubeconfig FILE [--controllers LIST]
 *                            [--kube-api-qps N] [--kube-api-burst N]
 *                            [--concurrent-replicaset-syncs N]
 *                            [--node-monitor-grace-period 40s]
 *
 * Exit codes as main.c's: 0 after SIGINT/SIGTERM, 1 runtime failure (unreadable
 * kubeconfig), 2 usage error.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/manager.h"
#include "controllers.h"

/*
 * A client of server in this process acting as cn (with TLS: a client certificate of
 * its own under file_base), limited to qps (< 0: no limit). 0, or -1 with *reterr.
 */
static int component_client(const struct ck_apiserver *server, const char *file_base,
                            const char *cn, double qps, int burst, struct ck_rest **ret,
                            struct ck_err *reterr)
{
    const char *url = ck_apiserver_url(server);
    struct ck_rest_config rc = {.server = url, .qps = qps, .burst = burst};
    char *ca = NULL, *cert = NULL, *key = NULL;
    if (strncmp(url, "https://", 8) == 0 &&
        ck_apiserver_component_credentials(server, file_base, cn, NULL, &ca, &cert, &key, reterr) <
            0)
        return -1;
    rc.ca_file = ca;
    rc.cert_file = cert;
    rc.key_file = key;
    int r = ck_rest_new(&rc, ret, reterr);
    free(ca);
    free(cert);
    free(key);
    return r < 0 ? -1 : 0;
}

/* The manager's client_for: the scheduler's own client (system:kube-scheduler). */
static struct ck_rest *client_for(void *arg, const char *user)
{
    struct ck_cmd_controllers *c = arg;
    struct ck_err err = {0};
    struct ck_rest *client = NULL;
    size_t max = sizeof(c->component_clients) / sizeof(c->component_clients[0]);
    const char *base = strrchr(user, ':') ? strrchr(user, ':') + 1 : user; /* kube-scheduler */
    if (c->n_component_clients == max ||
        component_client(c->server, base, user, -1, 0, &client, &err) < 0) {
        fprintf(stderr,
                "warning: no client of its own for %s (%s): it acts as the controller "
                "manager\n",
                user, err.msg);
        return NULL;
    }
    c->component_clients[c->n_component_clients++] = client;
    return client;
}

int ck_cmd_controllers_start(const struct ck_apiserver *server, const char *selection,
                             int64_t node_monitor_grace_period, struct ck_cmd_controllers *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->server = server;
    struct ck_err err = {0};
    /* over TLS, as kube-controller-manager: its own certificate, its own RBAC roles */
    if (component_client(server, "controller-manager", "system:kube-controller-manager",
                         CK_CONTROLLER_MANAGER_QPS, CK_CONTROLLER_MANAGER_BURST, &ret->client,
                         &err) < 0) {
        fprintf(stderr,
                "error: in-process controllers: %s (run `ckube server --controllers=-*` and "
                "`ckube controller-manager --kubeconfig FILE` with credentials of your CA)\n",
                err.msg);
        return -1;
    }
    struct ck_controller_manager_config config = {
        .client = ret->client,
        .controllers = selection,
        .client_for = client_for,
        .client_for_arg = ret,
        .node_monitor_grace_period = node_monitor_grace_period,
    };
    if (ck_controller_manager_start(&config, &ret->manager, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        ck_cmd_controllers_stop(ret);
        return -1;
    }
    return 0;
}

void ck_cmd_controllers_stop(struct ck_cmd_controllers *c)
{
    c->manager = ck_controller_manager_free(c->manager);
    c->client = ck_rest_free(c->client);
    for (size_t i = 0; i < c->n_component_clients; i++)
        c->component_clients[i] = ck_rest_free(c->component_clients[i]);
    c->n_component_clients = 0;
}

static const char cm_usage[] =
    "Usage: ckube controller-manager --kubeconfig FILE [flags]\n"
    "\n"
    "Runs the controllers against the API server the kubeconfig names.\n"
    "\n"
    "Flags:\n"
    "      --kubeconfig FILE                  kubeconfig of the server (required)\n"
    "      --controllers LIST                 controllers to run: * (all), NAME, -NAME\n"
    "                                         (default *; known: ";
/* ...the known controllers, from the controller manager's table, then: */
static const char cm_usage_tail[] =
    ")\n"
    "      --kube-api-qps N                   client requests per second (default 20)\n"
    "      --kube-api-burst N                 client burst (default 30)\n"
    "      --concurrent-replicaset-syncs N    replicaset workers (default 5)\n"
    "      --node-monitor-grace-period D      unrenewed lease time before a node is Unknown\n"
    "                                         (default 40s)\n"
    "  -v, --v N                              log verbosity (default 0)\n"
    "      --logging-format FORMAT            text (klog) or json (default text)\n"
    "  -h, --help                             print this help\n";

static void cm_print_usage(FILE *f)
{
    char known[256];
    fprintf(f, "%s%s%s", cm_usage, ck_controller_manager_known(known, sizeof(known)),
            cm_usage_tail);
}

static int cm_usage_error(const char *what, const char *value)
{
    fprintf(stderr, "error: %s%s%s\n\n", what, value ? ": " : "", value ? value : "");
    cm_print_usage(stderr);
    return 2;
}

/* A number flag in [min, max]. */
static bool parse_number(const char *arg, double min, double max, double *ret)
{
    char *end;
    double v = strtod(arg, &end);
    if (*arg == '\0' || *end != '\0' || v < min || v > max)
        return false;
    *ret = v;
    return true;
}

int ck_cmd_controller_manager(int argc, char **argv)
{
    enum { O_KUBECONFIG = 300, O_CONTROLLERS, O_QPS, O_BURST, O_RS_SYNCS, O_FORMAT, O_GRACE };
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"controllers", required_argument, NULL, O_CONTROLLERS},
        {"kube-api-qps", required_argument, NULL, O_QPS},
        {"kube-api-burst", required_argument, NULL, O_BURST},
        {"concurrent-replicaset-syncs", required_argument, NULL, O_RS_SYNCS},
        {"node-monitor-grace-period", required_argument, NULL, O_GRACE},
        {"v", required_argument, NULL, 'v'},
        {"logging-format", required_argument, NULL, O_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *kubeconfig = NULL, *controllers = "*";
    double qps = CK_CONTROLLER_MANAGER_QPS, burst = CK_CONTROLLER_MANAGER_BURST, workers = 5;
    int64_t grace = 0;
    opterr = 0;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, ":v:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            cm_print_usage(stdout);
            return 0;
        case O_KUBECONFIG:
            kubeconfig = optarg;
            break;
        case O_CONTROLLERS:
            controllers = optarg;
            break;
        case O_QPS:
            if (!parse_number(optarg, 0.001, 1e6, &qps))
                return cm_usage_error("invalid value for --kube-api-qps", optarg);
            break;
        case O_BURST:
            if (!parse_number(optarg, 1, 1e6, &burst))
                return cm_usage_error("invalid value for --kube-api-burst", optarg);
            break;
        case O_GRACE:
            if (!ck_cmd_parse_duration(optarg, &grace) || grace == 0)
                return cm_usage_error("invalid value for --node-monitor-grace-period", optarg);
            break;
        case O_RS_SYNCS:
            if (!parse_number(optarg, 1, 1000, &workers))
                return cm_usage_error("invalid value for --concurrent-replicaset-syncs", optarg);
            break;
        case 'v':
        case O_FORMAT: {
            const char *why = ck_cmd_log_flag(opt == 'v', optarg);
            if (why)
                return cm_usage_error(opt == 'v' ? "invalid value for -v"
                                                 : "invalid value for --logging-format",
                                      optarg);
            break;
        }
        case ':':
            return cm_usage_error("flag needs an argument", argv[optind - 1]);
        default:
            return cm_usage_error("unknown flag", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cm_usage_error("unexpected argument", argv[optind]);
    if (!kubeconfig)
        return cm_usage_error("--kubeconfig is required", NULL);
    struct ck_err err = {0};
    if (ck_controller_manager_check(controllers, &err) < 0)
        return cm_usage_error("invalid value for --controllers", err.msg);

    sigset_t stop_signals;
    ck_cmd_block_stop_signals(&stop_signals);

    struct ck_kubeconfig *kc = NULL;
    if (ck_kubeconfig_load(kubeconfig, NULL, &kc, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    struct ck_rest *client = NULL;
    struct ck_controller_manager *cm = NULL;
    int r = ck_rest_new_from_kubeconfig(kc, qps, (int)burst, &client, &err);
    struct ck_controller_manager_config config = {.client = client,
                                                  .controllers = controllers,
                                                  .workers = (int)workers,
                                                  .node_monitor_grace_period = grace};
    if (r == 0)
        r = ck_controller_manager_start(&config, &cm, &err);
    if (r < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        ck_rest_free(client);
        ck_kubeconfig_free(kc);
        return 1;
    }
    CK_LOGS(0, "Controller manager running", "server", kc->server, "controllers", controllers);
    int sig = 0;
    sigwait(&stop_signals, &sig);
    CK_LOGS(0, "Shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM");
    ck_controller_manager_free(cm);
    ck_rest_free(client);
    ck_kubeconfig_free(kc);
    return 0;
}
