/*
 * scheduler.c - `ckube scheduler`: the scheduler in a process of its own, as
 * kube-scheduler runs beside the API server.
 *
 *   ckube scheduler --kubeconfig FILE [--kube-api-qps 50] [--kube-api-burst 100]
 *                   [--scheduler-name default-scheduler]
 *                   [--leader-elect[=false]] [--leader-elect-lease-duration 15s]
 *                   [--leader-elect-renew-deadline 10s] [--leader-elect-retry-period 2s]
 *                   [--leader-elect-resource-name kube-scheduler]
 *                   [--leader-elect-resource-namespace kube-system]
 *
 * With leader election (the default, as kube-scheduler) it schedules only while holding
 * the Lease, which servers' in-process schedulers elect on too, so that only one
 * scheduler binds the pods; a process that loses the Lease exits 1 ("leaderelection
 * lost"), as kube-scheduler does. Exit codes as main.c's: 0 after SIGINT/SIGTERM, 1
 * runtime failure or lost lease, 2 usage.
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/client.h"
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
    "      --leader-elect[=BOOL]      schedule only while holding the leader Lease (default true)\n"
    "      --leader-elect-lease-duration D  how long a lease lasts unrenewed (default 15s)\n"
    "      --leader-elect-renew-deadline D  the leader gives up after D without renewing\n"
    "                                 (default 10s)\n"
    "      --leader-elect-retry-period D    between tries to acquire or renew (default 2s)\n"
    "      --leader-elect-resource-name NAME  the Lease (default kube-scheduler)\n"
    "      --leader-elect-resource-namespace NS  its namespace (default kube-system)\n"
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

/* The elected scheduler: its run starts on the elector's thread once leading. */
struct elected {
    struct ck_scheduler *s;
    pthread_t runner;
    bool running; /* the elector's thread alone writes it, before the main reads */
    pthread_t main_thread;
    atomic_bool stopping; /* the main thread is shutting down */
    atomic_bool lost;     /* the lease was lost, or the run could not start: exit 1 */
};

static void elected_started(void *arg)
{
    struct elected *e = arg;
    if (pthread_create(&e->runner, NULL, run_main, e->s) == 0) {
        e->running = true;
        return;
    }
    CK_LOGE("scheduler: cannot start");
    atomic_store(&e->lost, true);
    pthread_kill(e->main_thread, SIGTERM);
}

static void elected_stopped(void *arg)
{
    struct elected *e = arg;
    if (atomic_load(&e->stopping))
        return;
    CK_LOGE("leaderelection lost");
    atomic_store(&e->lost, true);
    pthread_kill(e->main_thread, SIGTERM); /* the main thread's sigwait ends the process */
}

int ck_cmd_scheduler(int argc, char **argv)
{
    enum {
        O_KUBECONFIG = 300,
        O_QPS,
        O_BURST,
        O_NAME,
        O_FORMAT,
        O_LE,
        O_LE_LEASE,
        O_LE_RENEW,
        O_LE_RETRY,
        O_LE_NAME,
        O_LE_NAMESPACE,
    };
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"kube-api-qps", required_argument, NULL, O_QPS},
        {"kube-api-burst", required_argument, NULL, O_BURST},
        {"scheduler-name", required_argument, NULL, O_NAME},
        {"leader-elect", optional_argument, NULL, O_LE},
        {"leader-elect-lease-duration", required_argument, NULL, O_LE_LEASE},
        {"leader-elect-renew-deadline", required_argument, NULL, O_LE_RENEW},
        {"leader-elect-retry-period", required_argument, NULL, O_LE_RETRY},
        {"leader-elect-resource-name", required_argument, NULL, O_LE_NAME},
        {"leader-elect-resource-namespace", required_argument, NULL, O_LE_NAMESPACE},
        {"v", required_argument, NULL, 'v'},
        {"logging-format", required_argument, NULL, O_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *kubeconfig = NULL, *name = CK_SCHEDULER_DEFAULT_NAME;
    double qps = CK_SCHEDULER_QPS, burst = CK_SCHEDULER_BURST;
    bool leader_elect = true;
    int64_t le_durations[3] = {CK_LE_LEASE_DURATION, CK_LE_RENEW_DEADLINE, CK_LE_RETRY_PERIOD};
    const char *le_name = "kube-scheduler", *le_namespace = "kube-system";
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
        case O_LE:
            if (!optarg || strcmp(optarg, "true") == 0)
                leader_elect = true;
            else if (strcmp(optarg, "false") == 0)
                leader_elect = false;
            else
                return usage_error("invalid value for --leader-elect", optarg);
            break;
        case O_LE_LEASE:
        case O_LE_RENEW:
        case O_LE_RETRY: {
            int64_t *d = &le_durations[opt - O_LE_LEASE];
            if (!ck_cmd_parse_duration(optarg, d) || *d <= 0)
                return usage_error("invalid duration", argv[optind - 1]);
            break;
        }
        case O_LE_NAME:
        case O_LE_NAMESPACE:
            if (!*optarg)
                return usage_error("invalid value", argv[optind - 1]);
            *(opt == O_LE_NAME ? &le_name : &le_namespace) = optarg;
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
    static struct elected e; /* the elector's callbacks reach it until it is freed */
    e = (struct elected){.s = s, .main_thread = pthread_self()};
    char identity[320];
    ck_cmd_election_identity(identity, sizeof(identity));
    struct ck_leader_election_config lec = {
        .identity = identity,
        .lease_duration = le_durations[0],
        .renew_deadline = le_durations[1],
        .retry_period = le_durations[2],
        .on_started_leading = elected_started,
        .on_stopped_leading = elected_stopped,
        .arg = &e,
        .release_on_cancel = true,
    };
    struct ck_leader_elector *le = NULL;
    if (r == 0 && leader_elect) {
        ck_lease_lock_init_rest(&lec.lock, client, le_namespace, le_name);
        r = ck_leader_elector_start(&lec, &le, &err);
    } else if (r == 0) {
        if (pthread_create(&e.runner, NULL, run_main, s) != 0)
            r = ck_err_set(&err, CK_ENOMEM, "cannot start the scheduler");
        e.running = r == 0;
    }
    if (r < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        ck_scheduler_free(s);
        ck_rest_free(client);
        ck_kubeconfig_free(kc);
        return 1;
    }
    CK_LOGS(0, "Scheduler starting", "server", kc->server, "schedulerName", name, "leaderElect",
            leader_elect ? "true" : "false", "identity", identity);
    int sig = 0;
    sigwait(&stop_signals, &sig);
    bool lost = atomic_load(&e.lost);
    if (!lost)
        CK_LOGS(0, "Shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM");
    atomic_store(&e.stopping, true);
    /* stopping the informers ends a run still waiting for their sync */
    ck_scheduler_stop_informers(s);
    if (e.running && !leader_elect)
        pthread_join(e.runner, NULL);
    ck_leader_elector_free(le); /* after this no callback runs: e.running is settled */
    if (e.running && leader_elect)
        pthread_join(e.runner, NULL);
    ck_scheduler_free(s);
    ck_rest_free(client);
    ck_kubeconfig_free(kc);
    return lost ? 1 : 0;
}
