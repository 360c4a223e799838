/*
 * controllers.c - the controller side of the `ckube` command: the in-process controllers
 * of `ckube server` and the `ckube controller-manager` subcommand.
 *
 *   ckube controller-manager --kubeconfig FILE [--controllers LIST]
 *                            [--kube-api-qps N] [--kube-api-burst N]
 *                            [--concurrent-NAME-syncs N ...]
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

/* ---- --concurrent-NAME-syncs ------------------------------------------------------------ */

size_t ck_cmd_syncs_init(struct ck_cmd_syncs *s, int first_opt, struct option *opts)
{
    memset(s, 0, sizeof(*s));
    s->first_opt = first_opt;
    size_t n_rows;
    const struct ck_controller_descriptor *table = ck_controller_manager_table(&n_rows);
    for (size_t i = 0; i < n_rows && s->n_flags < CK_CMD_MAX_SYNCS; i++) {
        if (!table[i].syncs_flag)
            continue;
        size_t k = s->n_flags++;
        snprintf(s->flag_names[k], sizeof(s->flag_names[k]), "concurrent-%s-syncs",
                 table[i].syncs_flag);
        s->controllers[k] = table[i].name;
        opts[k] = (struct option){s->flag_names[k], required_argument, NULL, first_opt + (int)k};
    }
    return s->n_flags;
}

int ck_cmd_syncs_flag(struct ck_cmd_syncs *s, int opt, const char *arg, char *why, size_t size)
{
    if (opt < s->first_opt || opt >= s->first_opt + (int)s->n_flags)
        return 0;
    size_t k = (size_t)(opt - s->first_opt);
    char *end;
    long workers = strtol(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || workers < 1 || workers > 1000) {
        snprintf(why, size, "invalid value \"%s\" for --%s: want a number from 1 to 1000", arg,
                 s->flag_names[k]);
        return -1;
    }
    size_t v = 0; /* the last value of a repeated flag wins */
    while (v < s->n_values && s->values[v].controller != s->controllers[k])
        v++;
    s->values[v] = (struct ck_controller_workers){s->controllers[k], (int)workers};
    s->n_values += v == s->n_values;
    return 1;
}

void ck_cmd_syncs_usage(FILE *f)
{
    size_t n_rows;
    const struct ck_controller_descriptor *table = ck_controller_manager_table(&n_rows);
    for (size_t i = 0; i < n_rows; i++) {
        if (!table[i].syncs_flag)
            continue;
        char flag[80];
        snprintf(flag, sizeof(flag), "--concurrent-%s-syncs N", table[i].syncs_flag);
        fprintf(f, "      %-34s %s workers (default %d)\n", flag, table[i].name,
                ck_controller_manager_workers(NULL, &table[i]));
    }
}

/* ---- in-process controllers ----------------------------------------------------------- */

int ck_cmd_controllers_start(const struct ck_apiserver *server, const char *selection,
                             const struct ck_cmd_syncs *syncs, struct ck_cmd_controllers *ret)
{
    memset(ret, 0, sizeof(*ret));
    struct ck_err err = {0};
    const char *url = ck_apiserver_url(server);
    struct ck_rest_config rc = {
        .server = url, .qps = CK_CONTROLLER_MANAGER_QPS, .burst = CK_CONTROLLER_MANAGER_BURST};
    /* over TLS, as kube-controller-manager: its own certificate, its own RBAC roles */
    char *ca = NULL, *cert = NULL, *key = NULL;
    if (strncmp(url, "https://", 8) == 0 &&
        ck_apiserver_component_credentials(server, "controller-manager",
                                           "system:kube-controller-manager", NULL, &ca, &cert, &key,
                                           &err) < 0) {
        fprintf(stderr,
                "error: in-process controllers: %s (run `ckube server --controllers=-*` and "
                "`ckube controller-manager --kubeconfig FILE` with credentials of your CA)\n",
                err.msg);
        return -1;
    }
    rc.ca_file = ca;
    rc.cert_file = cert;
    rc.key_file = key;
    int r = ck_rest_new(&rc, &ret->client, &err);
    free(ca);
    free(cert);
    free(key);
    if (r < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    struct ck_controller_manager_config config = {.client = ret->client,
                                                  .controllers = selection,
                                                  .workers = syncs ? syncs->values : NULL,
                                                  .n_workers = syncs ? syncs->n_values : 0};
    if (ck_controller_manager_start(&config, &ret->manager, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        ret->client = ck_rest_free(ret->client);
        return -1;
    }
    return 0;
}

void ck_cmd_controllers_stop(struct ck_cmd_controllers *c)
{
    c->manager = ck_controller_manager_free(c->manager);
    c->client = ck_rest_free(c->client);
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
    "      --kube-api-burst N                 client burst (default 30)\n";
/* ...the --concurrent-NAME-syncs flags, then: */
static const char cm_usage_flags[] =
    "  -v, --v N                              log verbosity (default 0)\n"
    "      --logging-format FORMAT            text (klog) or json (default text)\n"
    "  -h, --help                             print this help\n";

static void cm_print_usage(FILE *f)
{
    char known[256];
    fprintf(f, "%s%s%s", cm_usage, ck_controller_manager_known(known, sizeof(known)),
            cm_usage_tail);
    ck_cmd_syncs_usage(f);
    fputs(cm_usage_flags, f);
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
    enum { O_KUBECONFIG = 300, O_CONTROLLERS, O_QPS, O_BURST, O_FORMAT, O_SYNCS };
    static const struct option fixed[] = {
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"controllers", required_argument, NULL, O_CONTROLLERS},
        {"kube-api-qps", required_argument, NULL, O_QPS},
        {"kube-api-burst", required_argument, NULL, O_BURST},
        {"v", required_argument, NULL, 'v'},
        {"logging-format", required_argument, NULL, O_FORMAT},
        {"help", no_argument, NULL, 'h'},
    };
    enum { N_FIXED = sizeof(fixed) / sizeof(fixed[0]) };
    struct option longopts[N_FIXED + CK_CMD_MAX_SYNCS + 1] = {0};
    memcpy(longopts, fixed, sizeof(fixed));
    static struct ck_cmd_syncs syncs; /* longopts point at its flag names */
    ck_cmd_syncs_init(&syncs, O_SYNCS, longopts + N_FIXED);
    const char *kubeconfig = NULL, *controllers = "*";
    double qps = CK_CONTROLLER_MANAGER_QPS, burst = CK_CONTROLLER_MANAGER_BURST;
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
        default: {
            char why[160];
            int handled = ck_cmd_syncs_flag(&syncs, opt, optarg, why, sizeof(why));
            if (handled < 0)
                return cm_usage_error(why, NULL);
            if (handled == 0)
                return cm_usage_error("unknown flag", argv[optind - 1]);
        }
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
                                                  .workers = syncs.values,
                                                  .n_workers = syncs.n_values};
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
