/*
 * scheduler.c - `ckube scheduler`: the scheduler in a process of its own, as
 * kube-scheduler runs beside the API server.
 *
 *   ckube scheduler --kubeconfig FILE [--kube-api-qps 50] [--kube-api-burst 100]
 *                   [--scheduler-name default-scheduler]
 *
 * Run it with `ckube server --controllers=*,-scheduler` so that only one scheduler binds
 * the pods. Exit codes as main.c's: 0 after SIGINT/SIGTERM, 1 runtime failure, 2 usage.
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/scheduler.h"
#include "controllers.h"

static const char usage[] =
    "Usage: ckube scheduler --kubeconfig FILE [flags]\n"
    "\n"
    "Assigns pending pods to nodes, against the API server the kubeconfig names.\n"
    "\n"
    "Flags:\n"
    "      --kubeconfig FILE          kubeconfig of the server (required)\n"
    "      --kube-api-qps N           client requests per second (default 50)\n"
    "      --kube-api-burst N         client burst (default 100)\n"
    "      --scheduler-name NAME      the spec.schedulerName it serves (default default-scheduler)\n"
    "  -v, --v N                      log verbosity (default 0)\n"
    "      --logging-format FORMAT    text (klog) or json (default text)\n"
    "  -h, --help                     print this help\n";

static int usage_error(const char *what, const char *value)
{
    fprintf(stderr, "error: %s%s%s\n\n%s", what, value ? ": " : "", value ? value : "", usage);
    return 2;
}

static bool parse_number(const char *arg, double min, double max, double *ret)
{
    char *end;
    double v = strtod(arg, &end);
    if (*arg == '\0' || *end != '\0' || v < min || v > max)
        return false;
    *ret = v;
    return true;
}

static void *run_main(void *arg)
{
    struct ck_err err = {0};
    if (ck_scheduler_run(arg, &err) < 0)
        CK_LOGV(1, "scheduler not started: %s", err.msg);
    return NULL;
}

int ck_cmd_scheduler(int argc, char **argv)
{
    enum { O_KUBECONFIG = 300, O_QPS, O_BURST, O_NAME, O_FORMAT };
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"kube-api-qps", required_argument, NULL, O_QPS},
        {"kube-api-burst", required_argument, NULL, O_BURST},
        {"scheduler-name", required_argument, NULL, O_NAME},
        {"v", required_argument, NULL, 'v'},
        {"logging-format", required_argument, NULL, O_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *kubeconfig = NULL, *name = CK_SCHEDULER_DEFAULT_NAME;
    double qps = CK_SCHEDULER_QPS, burst = CK_SCHEDULER_BURST;
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
        case O_QPS:
            if (!parse_number(optarg, 0.001, 1e6, &qps))
                return usage_error("invalid value for --kube-api-qps", optarg);
            break;
        case O_BURST:
            if (!parse_number(optarg, 1, 1e6, &burst))
                return usage_error("invalid value for --kube-api-burst", optarg);
            break;
        case O_NAME:
            if (!*optarg)
                return usage_error("invalid value for --scheduler-name", optarg);
            name = optarg;
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

    sigset_t stop_signals;
    ck_cmd_block_stop_signals(&stop_signals);
    struct ck_err err = {0};
    struct ck_kubeconfig *kc = NULL;
    if (ck_kubeconfig_load(kubeconfig, NULL, &kc, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    struct ck_rest *client = NULL;
    struct ck_scheduler *s = NULL;
    int r = ck_rest_new_from_kubeconfig(kc, qps, (int)burst, &client, &err);
    struct ck_scheduler_config config = {.client = client, .scheduler_name = name};
    if (r == 0)
        r = ck_scheduler_new(&config, &s, &err);
    pthread_t runner;
    if (r == 0 && pthread_create(&runner, NULL, run_main, s) != 0)
        r = ck_err_set(&err, CK_ENOMEM, "cannot start the scheduler");
    if (r < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        ck_scheduler_free(s);
        ck_rest_free(client);
        ck_kubeconfig_free(kc);
        return 1;
    }
    CK_LOGS(0, "Scheduler starting", "server", kc->server, "schedulerName", name);
    int sig = 0;
    sigwait(&stop_signals, &sig);
    CK_LOGS(0, "Shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM");
    /* stopping the informers ends a run still waiting for their sync */
    ck_scheduler_stop_informers(s);
    pthread_join(runner, NULL);
    ck_scheduler_free(s);
    ck_rest_free(client);
    ck_kubeconfig_free(kc);
    return 0;
}
