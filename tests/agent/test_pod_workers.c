/*
 * test_pod_workers.c - the node agent's pod workers (lib/agent/agent.c, after the
 * kubelet's pkg/kubelet/pod_workers.go) against a real API server in this process,
 * on the process runtime (`sleep` on the host, no cgroups), with few workers for many
 * pods: every pod starts and its exec readiness probe decides its readiness (a failing
 * probe command's status is its own while other workers fork and the tick reaps; a
 * race, so this check catches a reaper that takes it only now and then), the
 * log server's readers (log paths, exec environments, attach and port-forward targets)
 * look at the pods from threads of their own throughout, an ephemeral container added
 * to every running pod through pods/ephemeralcontainers starts (the pod's containers
 * grow while those readers look), pods deleted with a grace
 * period and deleted at once (gone from the cache) are both removed with their
 * directories, and the agent's free joins its workers. Its informers list and watch in-process
 * (ck_agent_config's list_watch, as `ckube server` gives its own node: made for the pods and the
 * Services, released by the agent's free), so the pods reach it through the server's in-process
 * watch; `ckube agent`'s REST informers are the e2e.agent_* tests'. Built to be run under
 * ThreadSanitizer too (label "concurrency").
 */
#include "cktest.h"

#include <arpa/inet.h>
#include <glob.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function" /* only the server helpers */
#include "apiserver/httptest.h"
#pragma GCC diagnostic pop
#include "../../lib/agent/internal.h"
#include "ckube/agent.h"
#include "ckube/informer.h"
#include "ckube/rest.h"

#define NODE    "pw-node"
#define N_PODS  12
#define WORKERS 3 /* fewer than the pods: the queue and the pending flag are used */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL);
}

/* A free TCP port on the loopback address (the agent's HTTPS endpoint). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

static void pod_name(int i, char *buf, size_t size)
{
    snprintf(buf, size, "pw-%d", i);
}

/* Pod i: `sleep 3600`, probed ready by `true` (even i) or never, by `false` (odd i). */
static void create_pod(struct ck_rest *c, int i)
{
    char name[32];
    pod_name(i, name, sizeof(name));
    json_t *pod = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:[{s:s, s:s, s:[s, s], s:{s:{s:[s]}, s:i}}]}}",
        "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", "default", "spec",
        "nodeName", NODE, "terminationGracePeriodSeconds", 1, "containers", "name", "c", "image",
        "none", "command", "sleep", "3600", "readinessProbe", "exec", "command",
        i % 2 == 0 ? "true" : "false", "periodSeconds", 1);
    assert_non_null(pod);
    json_t *out = NULL;
    struct ck_err err = {0};
    int r = ck_rest_do(c, "POST", "/api/v1/namespaces/default/pods", pod, NULL, &out, &err);
    if (r < 0)
        fail_msg("create %s: %s", name, err.msg);
    json_decref(out);
    json_decref(pod);
}

/* The pod's object, or NULL when it is not there. */
static json_t *get_pod(struct ck_rest *c, int i)
{
    char name[32], path[128];
    pod_name(i, name, sizeof(name));
    snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", name);
    json_t *out = NULL;
    struct ck_err err = {0};
    if (ck_rest_do(c, "GET", path, NULL, NULL, &out, &err) < 0)
        return NULL;
    return out;
}

/* Adds the ephemeral container dbg (`sleep 3600`) to pod i through pods/ephemeralcontainers. */
static void add_ephemeral(struct ck_rest *c, int i)
{
    char name[32], path[160];
    pod_name(i, name, sizeof(name));
    snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s/ephemeralcontainers", name);
    json_t *pod = get_pod(c, i);
    assert_non_null(pod);
    json_object_set_new(json_object_get(pod, "spec"), "ephemeralContainers",
                        json_pack("[{s:s, s:s, s:[s, s]}]", "name", "dbg", "image", "none",
                                  "command", "sleep", "3600"));
    json_t *out = NULL;
    struct ck_err err = {0};
    if (ck_rest_do(c, "PUT", path, pod, NULL, &out, &err) < 0)
        fail_msg("ephemeral container of %s: %s", name, err.msg);
    json_decref(out);
    json_decref(pod);
}

/* Whether pod i's ephemeral container runs. */
static bool ephemeral_running(struct ck_rest *c, int i)
{
    json_t *pod = get_pod(c, i);
    const json_t *st = json_array_get(
        json_object_get(json_object_get(pod, "status"), "ephemeralContainerStatuses"), 0);
    bool running = json_object_get(json_object_get(st, "state"), "running") != NULL;
    json_decref(pod);
    return running;
}

/* Whether pod i runs, and (into *ready) whether its container is ready. */
static bool pod_running(struct ck_rest *c, int i, bool *ready)
{
    json_t *pod = get_pod(c, i);
    const json_t *st = json_object_get(pod, "status");
    const char *phase = json_string_value(json_object_get(st, "phase"));
    bool running = phase && strcmp(phase, "Running") == 0;
    *ready = json_is_true(
        json_object_get(json_array_get(json_object_get(st, "containerStatuses"), 0), "ready"));
    json_decref(pod);
    return running;
}

static void delete_pod(struct ck_rest *c, int i, int grace)
{
    char name[32], path[128];
    pod_name(i, name, sizeof(name));
    snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", name);
    json_t *options = json_pack("{s:i}", "gracePeriodSeconds", grace);
    json_t *out = NULL;
    struct ck_err err = {0};
    int r = ck_rest_do(c, "DELETE", path, options, NULL, &out, &err);
    if (r < 0 && r != CK_ENOENT)
        fail_msg("delete %s: %s", name, err.msg);
    json_decref(out);
    json_decref(options);
}

/* The log server's side: looks at every pod the way logs, exec, attach and port-forward do. */
struct reader {
    struct ck_agent *a;
    atomic_bool stop;
    atomic_int looks, found, found_ephemeral;
};

static void *reader_main(void *arg)
{
    struct reader *r = arg;
    while (!atomic_load(&r->stop)) {
        for (int i = 0; i < N_PODS; i++) {
            char name[32], path[4096], uid[64];
            pod_name(i, name, sizeof(name));
            if (ck_agent_log_path(r->a, "default", name, "c", false, path, sizeof(path)) == 0)
                atomic_fetch_add(&r->found, 1);
            if (ck_agent_log_path(r->a, "default", name, "dbg", false, path, sizeof(path)) == 0)
                atomic_fetch_add(&r->found_ephemeral, 1);
            char **env = NULL, *dir = NULL;
            if (ck__agent_container_env(r->a, "default", name, "c", &env, &dir) == 0) {
                for (size_t j = 0; env[j]; j++)
                    free(env[j]);
                free(env);
                free(dir);
            }
            struct ck__attach_target t;
            struct ck_err err = {0};
            ck__agent_container_attach(r->a, "default", name, "c", false, &t, &err);
            free(t.url);
            char *url = NULL;
            ck__agent_pod_port_forward_url(r->a, "default", name, 80, uid, sizeof(uid), &url, &err);
            free(url);
            atomic_fetch_add(&r->looks, 1);
        }
        sleep_ms(2);
    }
    return NULL;
}

/* The agent's root dir: its containers are killed at the end, whatever failed. */
static char root[] = "/tmp/ckube-pw-root-XXXXXX";

/*
 * Kills what runs of the pods (their pid files: "<pid> <start ticks>"), so that a failed
 * test leaves no `sleep` holding the test's output open, and removes the root dir.
 */
static int teardown(void **state)
{
    (void)state;
    char pattern[sizeof(root) + 32], cmd[sizeof(root) + 16];
    snprintf(pattern, sizeof(pattern), "%s/pods/*/containers/*/*/pid", root);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            FILE *f = fopen(g.gl_pathv[i], "r");
            int pid = 0;
            long long ticks = 0;
            if (f && fscanf(f, "%d %lld", &pid, &ticks) == 2 && ck_proc_alive(pid, ticks))
                ck_proc_signal(pid, SIGKILL);
            if (f)
                fclose(f);
        }
        globfree(&g);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static bool dir_empty(const char *path)
{
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "[ -z \"$(ls -A '%s' 2>/dev/null)\" ]", path);
    return system(cmd) == 0;
}

struct maker_calls {
    struct ck_apiserver *server;
    int pods, services, released;
};

/* The in-process source, as system:node:NODE, counting what the agent asks for. */
static int make_in_process(void *arg, const struct ck_resource *res, const char *namespace,
                           bool metadata, struct ck_list_watch *ret_lw, struct ck_err *reterr)
{
    static const char *const groups[] = {"system:nodes", "system:authenticated"};
    struct maker_calls *m = arg;
    assert_false(metadata);
    m->pods += strcmp(res->resource, "pods") == 0;
    m->services += strcmp(res->resource, "services") == 0;
    return ck_apiserver_list_watch_init(m->server, res->group, res->version, res->resource,
                                        namespace, "system:node:" NODE, groups, 2, ret_lw, reterr);
}

static void release_in_process(void *arg, struct ck_list_watch *lw)
{
    ((struct maker_calls *)arg)->released++;
    ck_apiserver_list_watch_release(lw);
}

static void test_pods_on_few_workers(void **state)
{
    (void)state;
    char sdir[] = "/tmp/ckube-pw-store-XXXXXX";
    struct ck_apiserver *server = test_server_start(sdir);
    assert_non_null(server);
    assert_non_null(mkdtemp(root));
    struct ck_rest_config rc = {.server = ck_apiserver_url(server), .qps = -1};
    struct ck_rest *c = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_rest_new(&rc, &c, &err), 0);

    struct maker_calls calls = {.server = server};
    struct ck_list_watch_maker maker = {make_in_process, release_in_process, &calls};
    struct ck_agent_config config = {.client = c,
                                     .list_watch = &maker,
                                     .node_name = NODE,
                                     .node_ip = "127.0.0.1",
                                     .root_dir = root,
                                     .port = free_port(),
                                     .pod_workers = WORKERS,
                                     .no_cgroups = true,
                                     .runtime = CK_AGENT_RUNTIME_PROCESS,
                                     .container_gc_period = -1};
    struct ck_agent *a = NULL;
    if (ck_agent_new(&config, &a, &err) < 0)
        fail_msg("agent: %s", err.msg);
    assert_int_equal(calls.pods, 1);
    assert_int_equal(calls.services, 1);
    if (ck_agent_run(a, &err) < 0)
        fail_msg("agent run: %s", err.msg);

    struct reader rd = {.a = a};
    pthread_t readers[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&readers[i], NULL, reader_main, &rd), 0);

    for (int i = 0; i < N_PODS; i++)
        create_pod(c, i);

    /* every pod runs, and the ones probed by `true` are ready (slow under ThreadSanitizer
       on a loaded machine: three minutes) */
    int64_t deadline = mono_ms() + 180000;
    int running = 0, ready_ok = 0;
    while (mono_ms() < deadline) {
        running = ready_ok = 0;
        for (int i = 0; i < N_PODS; i++) {
            bool ready = false;
            running += pod_running(c, i, &ready);
            ready_ok += i % 2 == 0 && ready;
        }
        if (running == N_PODS && ready_ok == N_PODS / 2)
            break;
        sleep_ms(200);
    }
    assert_int_equal(running, N_PODS);
    assert_int_equal(ready_ok, N_PODS / 2);
    /* three more probe periods: a failing probe never reads as a success */
    for (int round = 0; round < 15; round++) {
        for (int i = 1; i < N_PODS; i += 2) {
            bool ready = true;
            assert_true(pod_running(c, i, &ready));
            if (ready)
                fail_msg("pod %d, probed by `false`, is ready", i);
        }
        sleep_ms(200);
    }
    /* the readers found the running pods' logs */
    char name[32], path[4096];
    for (int i = 0; i < N_PODS; i++) {
        pod_name(i, name, sizeof(name));
        assert_int_equal(ck_agent_log_path(a, "default", name, "c", false, path, sizeof(path)), 0);
        struct stat sb;
        assert_int_equal(stat(path, &sb), 0);
    }
    assert_true(atomic_load(&rd.found) > 0);

    /* an ephemeral container in each, started while the readers look */
    for (int i = 0; i < N_PODS; i++)
        add_ephemeral(c, i);
    deadline = mono_ms() + 180000;
    while (mono_ms() < deadline) {
        running = 0;
        for (int i = 0; i < N_PODS; i++)
            running += ephemeral_running(c, i);
        if (running == N_PODS)
            break;
        sleep_ms(200);
    }
    assert_int_equal(running, N_PODS);
    for (int i = 0; i < N_PODS; i++) {
        pod_name(i, name, sizeof(name));
        assert_int_equal(ck_agent_log_path(a, "default", name, "dbg", false, path, sizeof(path)),
                         0);
    }
    assert_true(atomic_load(&rd.found_ephemeral) > 0);

    /* half deleted with their grace period (terminated), half at once (gone) */
    for (int i = 0; i < N_PODS; i++)
        delete_pod(c, i, i % 2 == 0 ? 1 : 0);
    deadline = mono_ms() + 180000;
    int left = N_PODS;
    while (mono_ms() < deadline && left > 0) {
        left = 0;
        for (int i = 0; i < N_PODS; i++) {
            json_t *pod = get_pod(c, i);
            pod_name(i, name, sizeof(name));
            left += pod != NULL ||
                    ck_agent_log_path(a, "default", name, "c", false, path, sizeof(path)) == 0;
            json_decref(pod);
        }
        sleep_ms(200);
    }
    assert_int_equal(left, 0);
    char pods_dir[sizeof(root) + 8];
    snprintf(pods_dir, sizeof(pods_dir), "%s/pods", root);
    deadline = mono_ms() + 10000;
    while (mono_ms() < deadline && !dir_empty(pods_dir))
        sleep_ms(200);
    assert_true(dir_empty(pods_dir));

    atomic_store(&rd.stop, true);
    for (int i = 0; i < 2; i++)
        pthread_join(readers[i], NULL);
    assert_true(atomic_load(&rd.looks) > 0);
    ck_agent_free(a);
    assert_int_equal(calls.released, 2);
    ck_rest_free(c);
    test_server_stop(server, sdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_pods_on_few_workers, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
