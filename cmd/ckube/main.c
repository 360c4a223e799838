/*
 * main.c - the `ckube` command: flags, wiring and exit codes, nothing more.
 *
 *   ckube server [--listen 127.0.0.1:6443] [--data-dir ./ckube-data] [--store URL]
 *   ckube version [-o text|json]
 *   ckube help
 *
 * Every subcommand takes the logging flags -v/--v N and --logging-format
 * text|json. Exit codes: 0 success, 1 runtime failure (port in use, cannot
 * write the data directory), 2 usage error (unknown flag, bad value), each
 * with one line on stderr; usage errors also print the usage.
 */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "ckube/apiserver.h"
#include "ckube/util.h"

#define EXIT_USAGE 2

static const char usage_text[] =
    "ckube is a small Kubernetes-compatible control plane.\n"
    "\n"
    "Usage:\n"
    "  ckube server [flags]    run the API server\n"
    "  ckube version [flags]   print version information\n"
    "  ckube help              print this help\n"
    "\n"
    "Server flags:\n"
    "      --listen HOST:PORT        address to serve on, loopback only (default 127.0.0.1:6443)\n"
    "      --data-dir DIR            where state and the kubeconfig live (default ./ckube-data)\n"
    "      --store URL               sqlite://PATH or etcd://HOST:PORT[,HOST:PORT...]\n"
    "                                (default sqlite://DATA-DIR/state.db)\n"
    "\n"
    "Version flags:\n"
    "  -o, --output text|json        output format (default text)\n"
    "\n"
    "Flags of every command:\n"
    "  -v, --v N                     log verbosity (default 0)\n"
    "      --logging-format FORMAT   text (klog) or json (default text)\n"
    "  -h, --help                    print this help\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n\n", stderr);
    fputs(usage_text, stderr);
    return EXIT_USAGE;
}

enum {
    OPT_LOGGING_FORMAT = 256,
    OPT_LISTEN,
    OPT_DATA_DIR,
    OPT_STORE,
};

struct options {
    const char *listen;
    const char *data_dir;
    const char *store;
    const char *output;
};

/* Handles the flags every subcommand shares. Returns 0, or an exit code. */
static int common_flag(int opt, const char *arg)
{
    switch (opt) {
    case 'v': {
        char *end;
        long level = strtol(arg, &end, 10);
        if (*arg == '\0' || *end != '\0' || level < 0 || level > INT_MAX)
            return usage_error("invalid value \"%s\" for -v: want a number >= 0", arg);
        ck_log_set_verbosity((int)level);
        return 0;
    }
    case OPT_LOGGING_FORMAT: {
        enum ck_log_format format;
        if (ck_log_parse_format(arg, &format) < 0)
            return usage_error("invalid value \"%s\" for --logging-format: want text or json", arg);
        ck_log_set_format(format);
        return 0;
    }
    default:
        return EXIT_USAGE;
    }
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
            fputs(usage_text, stdout);
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
        case ':':
            return usage_error("flag needs an argument: %s", argv[optind - 1]);
        case '?':
            return usage_error("unknown flag: %s", argv[optind - 1]);
        default: {
            int r = common_flag(opt, optarg);
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

static int cmd_server(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"data-dir", required_argument, NULL, OPT_DATA_DIR},
        {"store", required_argument, NULL, OPT_STORE},
        {"v", required_argument, NULL, 'v'},
        {"logging-format", required_argument, NULL, OPT_LOGGING_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct options opts = {.listen = CK_APISERVER_DEFAULT_LISTEN, .data_dir = "./ckube-data"};
    int r = parse_flags(argc, argv, longopts, ":v:h", &opts);
    if (r >= 0)
        return r;

    if (ensure_dir(opts.data_dir) < 0) {
        fprintf(stderr, "error: cannot use data directory %s: %s\n", opts.data_dir,
                strerror(errno));
        return 1;
    }

    /* Block the stop signals before any thread starts, so only sigwait() sees them. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN);
    raise_open_file_limit();

    char default_store[PATH_MAX + 16];
    if (!opts.store) {
        snprintf(default_store, sizeof(default_store), "sqlite://%s/state.db", opts.data_dir);
        opts.store = default_store;
    } else if (strncmp(opts.store, "sqlite://", 9) != 0 && strncmp(opts.store, "etcd://", 7) != 0) {
        return usage_error(
            "invalid value \"%s\" for --store: want sqlite://PATH or etcd://HOST:PORT[,...]",
            opts.store);
    }

    struct ck_err err = {0};
    struct ck_apiserver *server;
    struct ck_apiserver_config config = {.listen = opts.listen, .store_url = opts.store};
    if (ck_apiserver_start(&config, &server, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }

    char kubeconfig[PATH_MAX];
    char *abs_dir = realpath(opts.data_dir, NULL);
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", abs_dir ? abs_dir : opts.data_dir);
    free(abs_dir);
    if (ck_apiserver_write_kubeconfig(server, kubeconfig, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        ck_apiserver_free(server);
        return 1;
    }

    CK_LOGS(0, "Serving", "address", ck_apiserver_url(server), "store", opts.store, "version",
            ck_version()->git_version);
    printf("export KUBECONFIG=%s\n", kubeconfig);
    fflush(stdout);

    int sig = 0;
    sigwait(&stop_signals, &sig);
    CK_LOGS(0, "Shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM");
    ck_apiserver_begin_shutdown(server);
    ck_apiserver_free(server);
    CK_LOGS(0, "Stopped cleanly", "address", opts.listen);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    const char *command = argv[1];
    if (strcmp(command, "help") == 0 || strcmp(command, "--help") == 0 ||
        strcmp(command, "-h") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (strcmp(command, "version") == 0 || strcmp(command, "--version") == 0)
        return cmd_version(argc - 1, argv + 1);
    if (strcmp(command, "server") == 0)
        return cmd_server(argc - 1, argv + 1);
    if (command[0] == '-')
        return usage_error("unknown flag: %s (flags go after the command)", command);
    return usage_error("unknown command: %s", command);
}
