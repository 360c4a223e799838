/*
 * fake_nodes.c - `ckube fake-nodes`: simulated nodes for tests and benchmarks.
 *
 *   ckube fake-nodes --kubeconfig FILE --count N [--cpu 32] [--memory 256Gi]
 *                    [--pods 110] [--prefix fake-node-] [--kube-api-qps N]
 *                    [--renew-interval 10s]
 *
 * Registers N Ready nodes, renews their leases and runs (pretends to run) every pod
 * bound to them, until SIGINT or SIGTERM; lib/agent/fake/fake_nodes.c does the work.
 * While the server cannot be reached at start it retries every second. Exit codes as
 * main.c's: 0 after a signal, 1 runtime failure, 2 usage error.
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/agent.h"
#include "ckube/internal/util.h"
#include "controllers.h"

static const char usage[] =
    "Usage: ckube fake-nodes --kubeconfig FILE --count N [flags]\n"
    "\n"
    "Simulates N nodes: registers them Ready, renews their leases, and reports every pod\n"
    "bound to them Running and Ready (nothing runs); deleted pods go after their grace period.\n"
    "\n"
    "Flags:\n"
    "      --kubeconfig FILE      kubeconfig of the server (required)\n"
    "      --count N              nodes to simulate, 1 to 10000 (required)\n"
    "      --cpu Q                cpu of each node (default 32)\n"
    "      --memory Q             memory of each node (default 256Gi)\n"
    "      --pods N               pods each node takes (default 110)\n"
    "      --prefix P             node names are P0, P1, ... (default fake-node-)\n"
    "      --kube-api-qps N       client requests per second; 0: no limit (default 0)\n"
    "      --renew-interval D     how often the leases are renewed (default 10s)\n"
    "  -v, --v N                  log verbosity (default 0)\n"
    "      --logging-format FORMAT  text (klog) or json (default text)\n"
    "  -h, --help                 print this help\n";

static int usage_error(const char *what, const char *value)
{
    fprintf(stderr, "error: %s%s%s\n\n%s", what, value ? ": " : "", value ? value : "", usage);
    return 2;
}

struct starter {
    struct ck_fake_nodes *f;
    volatile sig_atomic_t stop;
    bool running;
};

static void *start_main(void *arg)
{
    struct starter *s = arg;
    while (!s->stop) {
        struct ck_err err = {0};
        if (ck_fake_nodes_run(s->f, &err) == 0) {
            s->running = true;
            CK_LOGI("Fake nodes running");
            return NULL;
        }
        CK_LOGV(0, "fake-nodes: not started yet: %s", err.msg);
        struct timespec second = {1, 0};
        nanosleep(&second, NULL);
    }
    return NULL;
}

int ck_cmd_fake_nodes(int argc, char **argv)
{
    enum {
        O_KUBECONFIG = 300,
        O_COUNT,
        O_CPU,
        O_MEMORY,
        O_PODS,
        O_PREFIX,
        O_QPS,
        O_RENEW,
        O_FORMAT
    };
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"count", required_argument, NULL, O_COUNT},
        {"cpu", required_argument, NULL, O_CPU},
        {"memory", required_argument, NULL, O_MEMORY},
        {"pods", required_argument, NULL, O_PODS},
        {"prefix", required_argument, NULL, O_PREFIX},
        {"kube-api-qps", required_argument, NULL, O_QPS},
        {"renew-interval", required_argument, NULL, O_RENEW},
        {"v", required_argument, NULL, 'v'},
        {"logging-format", required_argument, NULL, O_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct ck_fake_nodes_config config = {0};
    const char *kubeconfig = NULL;
    double qps = 0;
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
        case O_COUNT:
            config.count = (int)strtol(optarg, &end, 10);
            if (!*optarg || *end || config.count < 1 || config.count > 10000)
                return usage_error("invalid value for --count", optarg);
            break;
        case O_CPU:
            config.cpu = optarg;
            break;
        case O_MEMORY:
            config.memory = optarg;
            break;
        case O_PODS:
            config.pods = optarg;
            break;
        case O_PREFIX:
            config.prefix = optarg;
            break;
        case O_QPS:
            qps = strtod(optarg, &end);
            if (!*optarg || *end || qps < 0)
                return usage_error("invalid value for --kube-api-qps", optarg);
            break;
        case O_RENEW:
            if (!ck_cmd_parse_duration(optarg, &config.renew_interval) ||
                config.renew_interval < CK_MSEC * 100)
                return usage_error("invalid value for --renew-interval", optarg);
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
    if (!config.count)
        return usage_error("--count is required", NULL);

    sigset_t stop_signals;
    ck_cmd_block_stop_signals(&stop_signals);
    struct ck_err err = {0};
    struct ck_kubeconfig *kc = NULL;
    if (ck_kubeconfig_load(kubeconfig, NULL, &kc, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    struct ck_rest *client = NULL;
    int r = ck_rest_new_from_kubeconfig(kc, qps > 0 ? qps : -1, qps > 0 ? (int)(qps * 2) : 0,
                                        &client, &err);
    config.client = client;
    struct starter starter = {0};
    if (r == 0)
        r = ck_fake_nodes_new(&config, &starter.f, &err);
    pthread_t thread;
    if (r == 0 && pthread_create(&thread, NULL, start_main, &starter) != 0)
        r = ck_err_set(&err, CK_ENOMEM, "cannot start");
    if (r < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        ck_fake_nodes_free(starter.f);
        ck_rest_free(client);
        ck_kubeconfig_free(kc);
        return r == CK_EINVAL ? 2 : 1;
    }
    int sig = 0;
    sigwait(&stop_signals, &sig);
    CK_LOGS(0, "Shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM");
    starter.stop = 1;
    pthread_join(thread, NULL);
    ck_fake_nodes_free(starter.f);
    ck_rest_free(client);
    ck_kubeconfig_free(kc);
    return 0;
}
