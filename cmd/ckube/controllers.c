/*
 * controllers.c - the controller side of the `ckube` command: the in-process controllers
 * of `ckube server` and the `ckube controller-manager` subcommand.
 *
 *   ckube controller-manager --kubeconfig FILE [--controllers LIST]
 *                            [--kube-api-qps N] [--kube-api-burst N]
 *                            [--concurrent-NAME-syncs N ...]
 *                            [--node-monitor-grace-period 40s]
 *                            [--resource-quota-sync-period 5m]
 *                            [--cluster-cidr 10.244.0.0/16] [--node-cidr-mask-size 24]
 *                            [--allocate-node-cidrs[=false]]
 *                            [--leader-elect[=false]] [--leader-elect-lease-duration 15s]
 *                            [--leader-elect-renew-deadline 10s]
 *                            [--leader-elect-retry-period 2s]
 *                            [--leader-elect-resource-name kube-controller-manager]
 *                            [--leader-elect-resource-namespace kube-system]
 *
 * With leader election (the default, as kube-controller-manager) the controllers start
 * once this process holds the Lease; a process that loses it exits 1 ("leaderelection
 * lost"), as kube-controller-manager does, so that only one set of controllers ever acts.
 *
 * Exit codes as main.c's: 0 after SIGINT/SIGTERM, 1 runtime failure (unreadable
 * kubeconfig), 2 usage error.
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unistd.h>

#include "ckube/api.h"
#include "ckube/client.h"
#include "ckube/informer.h"
#include "ckube/manager.h"
#include "ckube/nodeipam.h"
#include "controllers.h"

/* ---- --horizontal-pod-autoscaler-* ------------------------------------------------------- */

const char *const ck_cmd_hpa_flag_names[CK_CMD_HPA_FLAGS] = {
    "horizontal-pod-autoscaler-sync-period",
    "horizontal-pod-autoscaler-tolerance",
    "horizontal-pod-autoscaler-downscale-stabilization",
    "horizontal-pod-autoscaler-cpu-initialization-period",
    "horizontal-pod-autoscaler-initial-readiness-delay",
};

const char ck_cmd_hpa_usage[] =
    "      --horizontal-pod-autoscaler-sync-period D  between two syncs of an autoscaler\n"
    "                                         (default 15s)\n"
    "      --horizontal-pod-autoscaler-tolerance F  the usage ratio change (around 1.0) too\n"
    "                                         small to scale for (default 0.1)\n"
    "      --horizontal-pod-autoscaler-downscale-stabilization D  how far back a scale down\n"
    "                                         looks for higher recommendations (default 5m)\n"
    "      --horizontal-pod-autoscaler-cpu-initialization-period D  after a pod starts, how\n"
    "                                         long its CPU may be skipped (default 5m)\n"
    "      --horizontal-pod-autoscaler-initial-readiness-delay D  after a pod starts, how\n"
    "                                         long it may turn ready and still count as\n"
    "                                         never ready (default 30s)\n";

bool ck_cmd_hpa_flag(int which, const char *value, struct ck_hpa_options *o)
{
    int64_t d = 0;
    if (which == 1) {
        char *end = NULL;
        double t = strtod(value, &end);
        if (end == value || *end || !(t > 0 && t < 1e6))
            return false;
        o->tolerance = t;
        return true;
    }
    if (!ck_cmd_parse_duration(value, &d) || d <= 0)
        return false;
    int64_t *slots[CK_CMD_HPA_FLAGS] = {&o->sync_period, NULL, &o->downscale_stabilization,
                                        &o->cpu_initialization_period, &o->initial_readiness_delay};
    *slots[which] = d;
    return true;
}

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

/* ---- node IPAM flags ------------------------------------------------------------------- */

int ck_cmd_node_ipam_check(struct ck_cmd_node_ipam *n, const char *selection, char *why,
                           size_t size)
{
    bool off = false;
    if (n->allocate) {
        if (strcmp(n->allocate, "true") == 0 || strcmp(n->allocate, "1") == 0)
            off = false;
        else if (strcmp(n->allocate, "false") == 0 || strcmp(n->allocate, "0") == 0)
            off = true;
        else
            return snprintf(why, size,
                            "invalid value \"%s\" for --allocate-node-cidrs: want true or false",
                            n->allocate),
                   -1;
    }
    n->node_cidr_mask_size = CK_NODEIPAM_NODE_MASK_SIZE;
    if (n->mask_size) {
        char *end;
        long v = strtol(n->mask_size, &end, 10);
        if (!*n->mask_size || *end || v < 1 || v > 32)
            return snprintf(why, size,
                            "invalid value \"%s\" for --node-cidr-mask-size: want 1 to 32",
                            n->mask_size),
                   -1;
        n->node_cidr_mask_size = (int)v;
    }
    /* first: the first item naming a controller wins, and nothing turns it on again */
    int len =
        snprintf(n->selection, sizeof(n->selection), "%s%s", off ? "-nodeipam," : "", selection);
    if (len < 0 || (size_t)len >= sizeof(n->selection))
        return snprintf(why, size, "--controllers is too long"), -1;
    if (off || !ck_controller_manager_enabled(n->selection, "nodeipam"))
        return 0;
    struct ck_err err = {0};
    struct ck_cidr_set *set = NULL;
    if (ck_cidr_set_new(n->cluster_cidr ? n->cluster_cidr : CK_NODEIPAM_CLUSTER_CIDR,
                        n->node_cidr_mask_size, &set, &err) < 0)
        return snprintf(why, size, "%s", err.msg), -1;
    ck_cidr_set_free(set);
    return 0;
}

void ck_cmd_node_ipam_usage(FILE *f)
{
    fprintf(f,
            "      --allocate-node-cidrs[=BOOL]       give every Node a pod range (default true)\n"
            "      --cluster-cidr CIDR                the IPv4 range of pod ranges (default %s)\n"
            "      --node-cidr-mask-size N            each Node's pod range's prefix length\n"
            "                                         (default %d)\n",
            CK_NODEIPAM_CLUSTER_CIDR, CK_NODEIPAM_NODE_MASK_SIZE);
}

/* ---- in-process controllers ----------------------------------------------------------- */

int ck_cmd_component_client(const struct ck_apiserver *server, const char *file_base,
                            const char *cn, const char *org, double qps, int burst,
                            struct ck_rest **ret, struct ck_err *reterr)
{
    const char *url = ck_apiserver_url(server);
    struct ck_rest_config rc = {.server = url, .qps = qps, .burst = burst};
    char *ca = NULL, *cert = NULL, *key = NULL;
    if (strncmp(url, "https://", 8) == 0 &&
        ck_apiserver_component_credentials(server, file_base, cn, org, &ca, &cert, &key, reterr) <
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

/*
 * A client of the server acting as user (system:kube-scheduler: file base kube-scheduler),
 * made once and kept until ck_cmd_controllers_stop: the controllers may start again after
 * each election. NULL after printing why.
 */
static struct ck_rest *component_client_of(struct ck_cmd_controllers *c, const char *user)
{
    pthread_mutex_lock(&c->mu);
    struct ck_rest *client = NULL;
    for (size_t i = 0; i < c->n_component_clients && !client; i++)
        if (strcmp(c->component_users[i], user) == 0)
            client = c->component_clients[i];
    size_t max = sizeof(c->component_clients) / sizeof(c->component_clients[0]);
    const char *base = strrchr(user, ':') ? strrchr(user, ':') + 1 : user; /* kube-scheduler */
    struct ck_err err = {0};
    if (client) {
        /* made before */
    } else if (c->n_component_clients == max || strlen(user) >= sizeof(c->component_users[0])) {
        fprintf(stderr, "warning: no client of its own for %s: too many\n", user);
    } else if (ck_cmd_component_client(c->server, base, user, NULL, -1, 0, &client, &err) < 0) {
        fprintf(stderr, "warning: no client of its own for %s (%s)\n", user, err.msg);
        client = NULL;
    } else {
        snprintf(c->component_users[c->n_component_clients], sizeof(c->component_users[0]), "%s",
                 user);
        c->component_clients[c->n_component_clients++] = client;
    }
    pthread_mutex_unlock(&c->mu);
    return client;
}

/* The manager's client_for: the scheduler's own client (system:kube-scheduler). */
static struct ck_rest *client_for(void *arg, const char *user)
{
    struct ck_rest *client = component_client_of(arg, user);
    if (!client)
        fprintf(stderr, "warning: %s acts as the controller manager\n", user);
    return client;
}

/*
 * One elected set of in-process controllers: a supervisor thread runs an elector on the
 * Lease; while it leads, the manager runs; when it loses the Lease the manager stops and
 * the supervisor campaigns again with a new elector. The API server keeps serving
 * throughout (kube-controller-manager would exit instead).
 */
struct ck_cmd_election {
    struct ck_controller_manager_config config;
    struct ck_leader_election_config lec;
    char selection[256];
    char lease[64];
    pthread_t supervisor;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stop;                        /* ck_cmd_controllers_stop: end the supervisor */
    bool ended;                       /* the current elector called on_stopped_leading */
    struct ck_controller_manager *cm; /* while leading */
};

static void elected_started(void *arg)
{
    struct ck_cmd_election *e = arg;
    struct ck_err err = {0};
    struct ck_controller_manager *cm = NULL;
    if (ck_controller_manager_start(&e->config, &cm, &err) < 0)
        CK_LOGE("controllers (%s): cannot start: %s", e->selection, err.msg);
    pthread_mutex_lock(&e->mu);
    e->cm = cm;
    pthread_mutex_unlock(&e->mu);
    CK_LOGS(0, "Controllers started as leader", "lease", e->lease, "controllers", e->selection);
}

static void elected_stopped(void *arg)
{
    struct ck_cmd_election *e = arg;
    pthread_mutex_lock(&e->mu);
    struct ck_controller_manager *cm = e->cm;
    e->cm = NULL;
    pthread_mutex_unlock(&e->mu);
    if (cm) {
        ck_controller_manager_free(cm); /* before another server's controllers may act */
        CK_LOGS(0, "Controllers stopped: leader lease lost or released", "lease", e->lease);
    }
    pthread_mutex_lock(&e->mu);
    e->ended = true;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->mu);
}

static void *supervise(void *arg)
{
    struct ck_cmd_election *e = arg;
    pthread_mutex_lock(&e->mu);
    while (!e->stop) {
        e->ended = false;
        pthread_mutex_unlock(&e->mu);
        struct ck_err err = {0};
        struct ck_leader_elector *le = NULL;
        int r = ck_leader_elector_start(&e->lec, &le, &err);
        if (r < 0)
            CK_LOGE("leader election on %s: %s", e->lease, err.msg);
        pthread_mutex_lock(&e->mu);
        while (r == 0 && !e->stop && !e->ended)
            pthread_cond_wait(&e->cond, &e->mu);
        pthread_mutex_unlock(&e->mu);
        ck_leader_elector_free(le); /* releases the Lease when stopping while leading */
        pthread_mutex_lock(&e->mu);
        if (!e->stop) { /* lost: campaign again after one retry period */
            CK_LOGS(0, "Leader lease lost: campaigning again", "lease", e->lease);
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            int64_t ns = until.tv_nsec + e->lec.retry_period;
            until.tv_sec += (time_t)(ns / 1000000000);
            until.tv_nsec = (long)(ns % 1000000000);
            while (!e->stop && pthread_cond_timedwait(&e->cond, &e->mu, &until) == 0)
                ;
        }
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

static struct ck_cmd_election *election_free(struct ck_cmd_election *e)
{
    if (!e)
        return NULL;
    pthread_mutex_lock(&e->mu);
    e->stop = true;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->supervisor, NULL);
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->mu);
    free(e);
    return NULL;
}

/* Starts electing on Lease kube-system/lease through lease_client, for selection. */
static int election_start(struct ck_cmd_controllers *c, const struct ck_cmd_server_election *se,
                          const struct ck_controller_manager_config *config, const char *lease,
                          struct ck_rest *lease_client, struct ck_cmd_election **ret)
{
    struct ck_cmd_election *e = calloc(1, sizeof(*e));
    if (!e)
        return -1;
    e->config = *config;
    snprintf(e->selection, sizeof(e->selection), "%s", config->controllers);
    e->config.controllers = e->selection;
    snprintf(e->lease, sizeof(e->lease), "%s", lease);
    e->lec = (struct ck_leader_election_config){
        .identity = c->identity,
        .lease_duration = se->lease_duration,
        .renew_deadline = se->renew_deadline,
        .retry_period = se->retry_period ? se->retry_period : CK_LE_RETRY_PERIOD,
        .on_started_leading = elected_started,
        .on_stopped_leading = elected_stopped,
        .arg = e,
        .release_on_cancel = true,
    };
    ck_lease_lock_init_rest(&e->lec.lock, lease_client, "kube-system", e->lease);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cond, NULL);
    if (pthread_create(&e->supervisor, NULL, supervise, e) != 0) {
        pthread_cond_destroy(&e->cond);
        pthread_mutex_destroy(&e->mu);
        free(e);
        return -1;
    }
    *ret = e;
    return 0;
}

char *ck_cmd_informer_census_metrics(void *unused)
{
    (void)unused;
    struct ck_informer_census_row *rows = NULL;
    size_t n = 0;
    if (ck_informer_census(&rows, &n) < 0)
        return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f) {
        static const char *const gauges[][2] = {
            {"ckube_informer_caches",
             "Informers of the components running in this process that cache the resource."},
            {"ckube_informer_cached_objects",
             "Objects the informers of the components running in this process hold, by "
             "resource."}};
        for (size_t g = 0; g < 2; g++) {
            fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", gauges[g][0], gauges[g][1], gauges[g][0]);
            for (size_t i = 0; i < n; i++)
                fprintf(f, "%s{group=\"%s\",resource=\"%s\"} %zu\n", gauges[g][0], rows[i].group,
                        rows[i].resource, g == 0 ? rows[i].informers : rows[i].objects);
        }
        if (fclose(f) != 0) {
            free(text);
            text = NULL;
        }
    }
    free(rows);
    return text;
}

int ck_cmd_signing_duration(struct ck_cmd_signing *s, const char *text)
{
    int64_t d = 0;
    if (!ck_cmd_parse_duration(text, &d) || d < CK_SEC)
        return -1;
    s->duration = (long long)(d / CK_SEC);
    return 0;
}

/*
 * The shared factory's informers list and watch straight from the server, in-process,
 * as system:kube-controller-manager, the user the client's certificate names: RBAC
 * judges them as it judges that client's requests (which still make every write).
 */
static int in_process_list_watch(void *arg, const struct ck_resource *res, const char *namespace,
                                 bool metadata, struct ck_list_watch *ret_lw, struct ck_err *reterr)
{
    static const char *const groups[] = {"system:authenticated"};
    return (metadata ? ck_apiserver_metadata_list_watch_init : ck_apiserver_list_watch_init)(
        arg, res->group, res->version, res->resource, namespace, "system:kube-controller-manager",
        groups, 1, ret_lw, reterr);
}

static void release_list_watch(void *arg, struct ck_list_watch *lw)
{
    (void)arg;
    ck_apiserver_list_watch_release(lw);
}

int ck_cmd_controllers_start(struct ck_apiserver *server, const char *selection,
                             const struct ck_cmd_syncs *syncs, int64_t node_monitor_grace_period,
                             int64_t resource_quota_sync_period, const struct ck_hpa_options *hpa,
                             const struct ck_cmd_server_election *election,
                             const struct ck_cmd_node_ipam *ipam,
                             const struct ck_cmd_signing *signing, struct ck_cmd_controllers *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->server = server;
    pthread_mutex_init(&ret->mu, NULL);
    struct ck_err err = {0};
    /*
     * Over TLS, as kube-controller-manager: its own certificate, its own RBAC roles. No
     * client-side rate limit in the server's own process: kube-controller-manager's 20/30
     * protect a remote server from a separate process; here the server's own limits do
     * (ckube controller-manager keeps --kube-api-qps's default).
     */
    if (ck_cmd_component_client(server, "controller-manager", "system:kube-controller-manager",
                                NULL, -1, 0, &ret->client, &err) < 0) {
        fprintf(stderr,
                "error: in-process controllers: %s (run `ckube server --controllers=-*` and "
                "`ckube controller-manager --kubeconfig FILE` with credentials of your CA)\n",
                err.msg);
        pthread_mutex_destroy(&ret->mu);
        return -1;
    }
    /*
     * One cache per resource for every in-process component, whichever Lease each is
     * elected on (the controllers and the scheduler), listing and watching as the
     * controller manager, without managedFields, as kube-controller-manager's informers.
     */
    if (ck_informer_factory_new(ret->client, NULL, 0, NULL, &ret->factory, &err) < 0) {
        fprintf(stderr, "error: in-process controllers: %s\n", err.msg);
        ck_cmd_controllers_stop(ret);
        return -1;
    }
    ck_informer_factory_set_transform(ret->factory, ck_transform_strip_managed_fields, NULL);
    struct ck_list_watch_maker in_process = {in_process_list_watch, release_list_watch, server};
    ck_informer_factory_set_list_watch(ret->factory, &in_process);
    struct ck_controller_manager_config config = {
        .factory = ret->factory,
        .client = ret->client,
        .controllers = selection,
        .client_for = client_for,
        .client_for_arg = ret,
        .node_monitor_grace_period = node_monitor_grace_period,
        .resource_quota_sync_period = resource_quota_sync_period,
        .hpa = hpa ? *hpa : (struct ck_hpa_options){0},
        .cluster_signing_cert_file = signing ? signing->cert_file : NULL,
        .cluster_signing_key_file = signing ? signing->key_file : NULL,
        .cluster_signing_duration = signing ? signing->duration : 0,
        .cluster_cidr = ipam ? ipam->cluster_cidr : NULL,
        .node_cidr_mask_size = ipam ? ipam->node_cidr_mask_size : 0,
        .workers = syncs ? syncs->values : NULL,
        .n_workers = syncs ? syncs->n_values : 0,
    };
    if (!election || !election->enabled) {
        if (ck_controller_manager_start(&config, &ret->manager, &err) < 0) {
            fprintf(stderr, "error: %s\n", err.msg);
            ck_cmd_controllers_stop(ret);
            return -1;
        }
        return 0;
    }
    /*
     * As separate processes would: the controllers on Lease kube-controller-manager, the
     * scheduler on kube-scheduler, so a server also defers to a `ckube controller-manager`
     * or `ckube scheduler` elsewhere, and they to it.
     */
    snprintf(ret->identity, sizeof(ret->identity), "%s", election->identity);
    bool scheduler = ck_controller_manager_enabled(selection, "scheduler");
    char rest[256];
    int n = snprintf(rest, sizeof(rest), "%s,-scheduler", selection);
    bool others = false;
    size_t n_rows;
    const struct ck_controller_descriptor *table = ck_controller_manager_table(&n_rows);
    for (size_t i = 0; i < n_rows; i++)
        others |= strcmp(table[i].name, "scheduler") != 0 &&
                  ck_controller_manager_enabled(selection, table[i].name);
    int r = 0;
    if (others) {
        config.controllers = rest;
        r = n < 0 || (size_t)n >= sizeof(rest)
                ? -1
                : election_start(ret, election, &config, "kube-controller-manager", ret->client,
                                 &ret->elections[0]);
    }
    if (r == 0 && scheduler) {
        struct ck_rest *sc = component_client_of(ret, "system:kube-scheduler");
        config.controllers = "scheduler";
        r = election_start(ret, election, &config, "kube-scheduler", sc ? sc : ret->client,
                           &ret->elections[1]);
    }
    if (r < 0) {
        fprintf(stderr, "error: in-process controllers: cannot start leader election\n");
        ck_cmd_controllers_stop(ret);
        return -1;
    }
    return 0;
}

void ck_cmd_controllers_stop(struct ck_cmd_controllers *c)
{
    if (c->factory) /* no handler runs from here, and no manager waits for a cache */
        ck_informer_factory_stop(c->factory);
    for (size_t i = 0; i < 2; i++)
        c->elections[i] = election_free(c->elections[i]);
    c->manager = ck_controller_manager_free(c->manager);
    c->factory = ck_informer_factory_free(c->factory);
    c->client = ck_rest_free(c->client);
    for (size_t i = 0; i < c->n_component_clients; i++)
        c->component_clients[i] = ck_rest_free(c->component_clients[i]);
    c->n_component_clients = 0;
    if (c->server)
        pthread_mutex_destroy(&c->mu);
    c->server = NULL;
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
    "      --node-monitor-grace-period D      unrenewed lease time before a node is Unknown\n"
    "                                         (default 40s)\n"
    "      --resource-quota-sync-period D     between full recounts of each ResourceQuota\n"
    "                                         (default 5m)\n"
    "      --cluster-signing-cert-file FILE   the CA csrsigning signs with (none: csrsigning\n"
    "                                         does not run)\n"
    "      --cluster-signing-key-file FILE    its key\n"
    "      --cluster-signing-duration D       validity of the certificates it signs (default\n"
    "                                         8760h, shortened by a request's\n"
    "                                         expirationSeconds)\n"
    "      --leader-elect[=BOOL]              run the controllers only while holding the\n"
    "                                         leader Lease (default true)\n"
    "      --leader-elect-lease-duration D    how long a lease lasts unrenewed (default 15s)\n"
    "      --leader-elect-renew-deadline D    the leader gives up after D without renewing\n"
    "                                         (default 10s)\n"
    "      --leader-elect-retry-period D      between tries to acquire or renew (default 2s)\n"
    "      --leader-elect-resource-name NAME  the Lease (default kube-controller-manager)\n"
    "      --leader-elect-resource-namespace NS  its namespace (default kube-system)\n";
/* ...the --concurrent-NAME-syncs flags, then: */
static const char cm_usage_flags[] =
    "  -v, --v N                              log verbosity (default 0)\n"
    "      --logging-format FORMAT            text (klog) or json (default text)\n"
    "  -h, --help                             print this help\n";

static void cm_print_usage(FILE *f)
{
    char known[CK_CONTROLLER_MANAGER_KNOWN_SIZE];
    fprintf(f, "%s%s%s", cm_usage, ck_controller_manager_known(known, sizeof(known)),
            cm_usage_tail);
    ck_cmd_syncs_usage(f);
    ck_cmd_node_ipam_usage(f);
    fputs(ck_cmd_hpa_usage, f);
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

/* ---- leader election ------------------------------------------------------------------ */

struct election {
    struct ck_controller_manager_config config;
    struct ck_controller_manager *cm; /* set and freed on the elector's thread or after it */
    pthread_t main_thread;
    atomic_bool stopping; /* the main thread is shutting down */
    atomic_bool lost;     /* the lease was lost: exit 1 */
};

static void election_started(void *arg)
{
    struct election *e = arg;
    struct ck_err err = {0};
    if (ck_controller_manager_start(&e->config, &e->cm, &err) < 0) {
        CK_LOGE("controller manager: cannot start the controllers: %s", err.msg);
        atomic_store(&e->lost, true);
        pthread_kill(e->main_thread, SIGTERM);
    }
}

static void election_stopped(void *arg)
{
    struct election *e = arg;
    if (atomic_load(&e->stopping))
        return;
    CK_LOGE("leaderelection lost");
    atomic_store(&e->lost, true);
    pthread_kill(e->main_thread, SIGTERM); /* the main thread's sigwait ends the process */
}

void ck_cmd_election_identity(char *buf, size_t size)
{
    char host[256] = "localhost", uid[40];
    if (gethostname(host, sizeof(host)) < 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    ck_uuid(uid);
    snprintf(buf, size, "%s_%s", host, uid);
}

int ck_cmd_controller_manager(int argc, char **argv)
{
    enum {
        O_KUBECONFIG = 300,
        O_CONTROLLERS,
        O_QPS,
        O_BURST,
        O_FORMAT,
        O_LE,
        O_LE_LEASE,
        O_LE_RENEW,
        O_LE_RETRY,
        O_LE_NAME,
        O_LE_NAMESPACE,
        O_GRACE,
        O_QUOTA_SYNC,
        O_CLUSTER_CIDR,
        O_MASK_SIZE,
        O_ALLOCATE,
        O_HPA, /* the --horizontal-pod-autoscaler-* flags: O_HPA, O_HPA + 1, ... */
        O_SIGNING_CERT = O_HPA + CK_CMD_HPA_FLAGS,
        O_SIGNING_KEY,
        O_SIGNING_DURATION,
        O_SYNCS,
    };
    static const struct option fixed[] = {
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"controllers", required_argument, NULL, O_CONTROLLERS},
        {"kube-api-qps", required_argument, NULL, O_QPS},
        {"kube-api-burst", required_argument, NULL, O_BURST},
        {"leader-elect", optional_argument, NULL, O_LE},
        {"leader-elect-lease-duration", required_argument, NULL, O_LE_LEASE},
        {"leader-elect-renew-deadline", required_argument, NULL, O_LE_RENEW},
        {"leader-elect-retry-period", required_argument, NULL, O_LE_RETRY},
        {"leader-elect-resource-name", required_argument, NULL, O_LE_NAME},
        {"leader-elect-resource-namespace", required_argument, NULL, O_LE_NAMESPACE},
        {"node-monitor-grace-period", required_argument, NULL, O_GRACE},
        {"resource-quota-sync-period", required_argument, NULL, O_QUOTA_SYNC},
        {"cluster-cidr", required_argument, NULL, O_CLUSTER_CIDR},
        {"node-cidr-mask-size", required_argument, NULL, O_MASK_SIZE},
        {"allocate-node-cidrs", optional_argument, NULL, O_ALLOCATE},
        {"horizontal-pod-autoscaler-sync-period", required_argument, NULL, O_HPA},
        {"horizontal-pod-autoscaler-tolerance", required_argument, NULL, O_HPA + 1},
        {"horizontal-pod-autoscaler-downscale-stabilization", required_argument, NULL, O_HPA + 2},
        {"horizontal-pod-autoscaler-cpu-initialization-period", required_argument, NULL, O_HPA + 3},
        {"horizontal-pod-autoscaler-initial-readiness-delay", required_argument, NULL, O_HPA + 4},
        {"cluster-signing-cert-file", required_argument, NULL, O_SIGNING_CERT},
        {"cluster-signing-key-file", required_argument, NULL, O_SIGNING_KEY},
        {"cluster-signing-duration", required_argument, NULL, O_SIGNING_DURATION},
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
    bool leader_elect = true;
    int64_t le_durations[3] = {CK_LE_LEASE_DURATION, CK_LE_RENEW_DEADLINE, CK_LE_RETRY_PERIOD};
    const char *le_name = "kube-controller-manager", *le_namespace = "kube-system";
    int64_t grace = 0, quota_sync = 0;
    struct ck_hpa_options hpa = {0};
    static struct ck_cmd_node_ipam ipam; /* the manager's config points at its selection */
    struct ck_cmd_signing signing = {0};
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
        case O_LE:
            if (!optarg || strcmp(optarg, "true") == 0)
                leader_elect = true;
            else if (strcmp(optarg, "false") == 0)
                leader_elect = false;
            else
                return cm_usage_error("invalid value for --leader-elect", optarg);
            break;
        case O_LE_LEASE:
        case O_LE_RENEW:
        case O_LE_RETRY: {
            int64_t *d = &le_durations[opt - O_LE_LEASE];
            if (!ck_cmd_parse_duration(optarg, d) || *d <= 0)
                return cm_usage_error(opt == O_LE_LEASE   ? "invalid value for "
                                                            "--leader-elect-lease-duration"
                                      : opt == O_LE_RENEW ? "invalid value for "
                                                            "--leader-elect-renew-deadline"
                                                          : "invalid value for "
                                                            "--leader-elect-retry-period",
                                      optarg);
            break;
        }
        case O_GRACE:
            if (!ck_cmd_parse_duration(optarg, &grace) || grace == 0)
                return cm_usage_error("invalid value for --node-monitor-grace-period", optarg);
            break;
        case O_QUOTA_SYNC:
            if (!ck_cmd_parse_duration(optarg, &quota_sync) || quota_sync <= 0)
                return cm_usage_error("invalid value for --resource-quota-sync-period", optarg);
            break;
        case O_CLUSTER_CIDR:
            ipam.cluster_cidr = optarg;
            break;
        case O_HPA:
        case O_HPA + 1:
        case O_HPA + 2:
        case O_HPA + 3:
        case O_HPA + 4:
            if (!ck_cmd_hpa_flag(opt - O_HPA, optarg, &hpa))
                return cm_usage_error("invalid value for a --horizontal-pod-autoscaler flag",
                                      optarg);
            break;
        case O_MASK_SIZE:
            ipam.mask_size = optarg;
            break;
        case O_ALLOCATE:
            ipam.allocate = optarg ? optarg : "true";
            break;
        case O_SIGNING_CERT:
            signing.cert_file = optarg;
            break;
        case O_SIGNING_KEY:
            signing.key_file = optarg;
            break;
        case O_SIGNING_DURATION:
            if (ck_cmd_signing_duration(&signing, optarg) < 0)
                return cm_usage_error("invalid value for --cluster-signing-duration", optarg);
            break;
        case O_LE_NAME:
            le_name = optarg;
            break;
        case O_LE_NAMESPACE:
            le_namespace = optarg;
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
    char why[320];
    if (ck_cmd_node_ipam_check(&ipam, controllers, why, sizeof(why)) < 0)
        return cm_usage_error(why, NULL);

    sigset_t stop_signals;
    ck_cmd_block_stop_signals(&stop_signals);

    struct ck_kubeconfig *kc = NULL;
    if (ck_kubeconfig_load(kubeconfig, NULL, &kc, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    struct ck_rest *client = NULL;
    static struct election e; /* the elector's callbacks reach it until it is freed */
    struct ck_leader_elector *le = NULL;
    int r = ck_rest_new_from_kubeconfig(kc, qps, (int)burst, &client, &err);
    e = (struct election){.config = {.client = client,
                                     .controllers = ipam.selection,
                                     .cluster_cidr = ipam.cluster_cidr,
                                     .node_cidr_mask_size = ipam.node_cidr_mask_size,
                                     .workers = syncs.values,
                                     .n_workers = syncs.n_values,
                                     .node_monitor_grace_period = grace,
                                     .resource_quota_sync_period = quota_sync,
                                     .hpa = hpa,
                                     .cluster_signing_cert_file = signing.cert_file,
                                     .cluster_signing_key_file = signing.key_file,
                                     .cluster_signing_duration = signing.duration},
                          .main_thread = pthread_self()};
    char identity[320];
    ck_cmd_election_identity(identity, sizeof(identity));
    struct ck_leader_election_config lec = {
        .identity = identity,
        .lease_duration = le_durations[0],
        .renew_deadline = le_durations[1],
        .retry_period = le_durations[2],
        .on_started_leading = election_started,
        .on_stopped_leading = election_stopped,
        .arg = &e,
        .release_on_cancel = true,
    };
    if (r == 0 && leader_elect) {
        ck_lease_lock_init_rest(&lec.lock, client, le_namespace, le_name);
        r = ck_leader_elector_start(&lec, &le, &err);
    } else if (r == 0) {
        r = ck_controller_manager_start(&e.config, &e.cm, &err);
    }
    if (r < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        ck_rest_free(client);
        ck_kubeconfig_free(kc);
        return 1;
    }
    CK_LOGS(0, "Controller manager running", "server", kc->server, "controllers", controllers,
            "leaderElect", leader_elect ? "true" : "false", "identity", identity);
    int sig = 0;
    sigwait(&stop_signals, &sig);
    bool lost = atomic_load(&e.lost);
    if (!lost)
        CK_LOGS(0, "Shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM");
    atomic_store(&e.stopping, true);
    ck_leader_elector_free(le); /* after this no callback runs: e.cm is ours */
    e.cm = ck_controller_manager_free(e.cm);
    ck_rest_free(client);
    ck_kubeconfig_free(kc);
    return lost ? 1 : 0;
}
