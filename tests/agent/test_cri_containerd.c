/*
 * test_cri_containerd.c - the CRI client (lib/agent/cri.c) against a real
 * containerd, which tests/agent/test_cri_containerd.sh starts on a socket of
 * its own, inside a network and a mount namespace of the test's own, with a
 * CNI bridge (10.244.7.0/24) and the images it built and imported. Read from
 * the environment: CKUBE_CRI_ENDPOINT (unix:///...), CKUBE_CRI_IMAGE (the
 * busybox image's name), CKUBE_CRI_IMAGE_ID (the digest of its config: the id
 * CRI reports), CKUBE_CRI_IMAGE_MIN_SIZE (the bytes of its blobs, which its
 * size counts at least), CKUBE_CRI_ROOT (containerd's root directory),
 * CKUBE_CRI_WEB_IMAGE (the image whose entrypoint serves HTTP on 8080),
 * CKUBE_CRI_CGROUP_PARENT (the pods' cgroup parent), CKUBE_CRI_LOG_DIR (where
 * pods' log directories go), CKUBE_CRI_HOST_DIR (a directory holding "file",
 * mounted into a container) and CKUBE_CRI_SUBNET (the pod addresses' prefix).
 *
 * Version answers containerd and CRI v1; Status has RuntimeReady true. A pod:
 * RunPodSandbox gives a READY sandbox with an address in the pod network,
 * found by ListPodSandbox's label filter; a busybox container with a command,
 * an env var, a hostPath mount and a log path runs, its log file holds its
 * stdout and stderr as CRI log lines, ExecSync sees the env var, the mount
 * and the exit code, an ExecSync past its timeout comes back in seconds,
 * ListContainers filters by sandbox and state, other threads' calls are
 * answered while an ExecSync waits, Exec, Attach and PortForward
 * answer the streaming server's URLs, stats give a working set, the log is
 * reopened, StopContainer kills it after its grace period (exit 137 or 143);
 * a container of the web image with no command runs its ENTRYPOINT, which
 * serves its page to the test's network namespace; containers and the
 * sandbox are removed and are then NotFound (CK_ENOENT). A hostNetwork
 * sandbox gets no address of its own. Then images: the image is listed, its
 * status gives its id and size, ImageFsInfo names a filesystem under
 * containerd's root, RemoveImage removes it (listed no more, no status, and
 * a second removal is no error, as CRI asks); a pull from a registry nothing
 * serves fails with the runtime's words and gRPC status.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "../../lib/agent/internal.h"
#include "ckube/internal/util.h"

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        fail_msg("%s is not set: run this through test_cri_containerd.sh", name);
    return v;
}

static struct ck__cri *cri;

static int setup(void **state)
{
    (void)state;
    struct ck_err err = {0};
    return ck__cri_open(env("CKUBE_CRI_ENDPOINT"), NULL, 30000, &cri, &err);
}

static int teardown(void **state)
{
    (void)state;
    cri = ck__cri_close(cri);
    return 0;
}

/* Whether the runtime lists image by one of its tags. */
static bool listed(const char *image)
{
    struct ck__cri_images l;
    struct ck_err err = {0};
    if (ck__cri_list_images(cri, NULL, &l, &err) < 0)
        fail_msg("ListImages: %s", err.msg);
    bool found = false;
    for (size_t i = 0; i < l.n; i++)
        for (size_t t = 0; t < l.items[i].n_repo_tags; t++)
            found |= strcmp(l.items[i].repo_tags[t], image) == 0;
    ck__cri_images_release(&l);
    return found;
}

static void test_version_and_status(void **state)
{
    (void)state;
    struct ck_err err = {0};
    struct ck__cri_version v;
    if (ck__cri_version(cri, "0.1.0", &v, &err) < 0)
        fail_msg("Version: %s", err.msg);
    assert_string_equal(v.runtime_name, "containerd");
    assert_string_equal(v.runtime_api_version, "v1");
    assert_non_null(v.runtime_version);
    print_message("runtime %s %s, CRI %s\n", v.runtime_name, v.runtime_version,
                  v.runtime_api_version);
    ck__cri_version_release(&v);

    struct ck__cri_status s;
    if (ck__cri_status(cri, false, &s, &err) < 0)
        fail_msg("Status: %s", err.msg);
    const struct ck__cri_condition *rt = ck__cri_status_condition(&s, "RuntimeReady");
    const struct ck__cri_condition *net = ck__cri_status_condition(&s, "NetworkReady");
    assert_non_null(rt);
    assert_true(rt->status);
    assert_non_null(net);
    assert_true(net->status); /* the test's CNI configuration is loaded */
    print_message("NetworkReady %s %s\n", net->status ? "true" : "false",
                  net->message ? net->message : "");
    ck__cri_status_release(&s);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The pod every test below shares, and its containers. */
static char pod_uid[64], pod_label[64];
static struct ck__cri_kv pod_labels[2];
static char log_dir[512];
static struct ck__cri_sandbox_config pod;
static char *pod_id, *pod_ip, *ct_id, *web_id;

static void test_run_sandbox(void **state)
{
    (void)state;
    struct ck_err err = {0};
    snprintf(pod_uid, sizeof(pod_uid), "ckube-test-uid-%ld", (long)getpid());
    snprintf(pod_label, sizeof(pod_label), "ckube-test-%ld", (long)getpid());
    pod_labels[0] = (struct ck__cri_kv){"app", pod_label};
    pod_labels[1] = (struct ck__cri_kv){"io.kubernetes.pod.uid", pod_uid};
    snprintf(log_dir, sizeof(log_dir), "%s/default_web_%s", env("CKUBE_CRI_LOG_DIR"), pod_uid);
    static const struct ck__cri_port_mapping ports[] = {
        {.container_port = 8080, .host_port = 18080}};
    pod = (struct ck__cri_sandbox_config){.name = "web",
                                          .uid = pod_uid,
                                          .ns = "default",
                                          .hostname = "web",
                                          .log_directory = log_dir,
                                          .port_mappings = ports,
                                          .n_port_mappings = 1,
                                          .labels = pod_labels,
                                          .n_labels = 2,
                                          .cgroup_parent = env("CKUBE_CRI_CGROUP_PARENT"),
                                          .security = {.network = CK__CRI_NS_POD,
                                                       .pid = CK__CRI_NS_CONTAINER,
                                                       .ipc = CK__CRI_NS_POD,
                                                       .seccomp = CK__CRI_SECCOMP_UNSET}};
    if (ck__cri_run_sandbox(cri, &pod, NULL, 60000, &pod_id, &err) < 0)
        fail_msg("RunPodSandbox: %s", err.msg);
    print_message("sandbox %s\n", pod_id);

    struct ck__cri_sandbox_status st;
    if (ck__cri_sandbox_status(cri, pod_id, &st, &err) < 0)
        fail_msg("PodSandboxStatus: %s", err.msg);
    assert_string_equal(st.sandbox.id, pod_id);
    assert_string_equal(st.sandbox.name, "web");
    assert_string_equal(st.sandbox.uid, pod_uid);
    assert_int_equal(st.sandbox.state, CK__CRI_SANDBOX_READY);
    assert_true(st.sandbox.created_at > 0);
    assert_string_equal(ck__cri_kv_get(st.sandbox.labels, st.sandbox.n_labels, "app"), pod_label);
    assert_int_equal(st.network, CK__CRI_NS_POD);
    assert_non_null(st.ip);
    const char *subnet = env("CKUBE_CRI_SUBNET");
    if (strncmp(st.ip, subnet, strlen(subnet)) != 0)
        fail_msg("the pod's address %s is not in %s0/24", st.ip, subnet);
    print_message("pod address %s\n", st.ip);
    pod_ip = strdup(st.ip);
    ck__cri_sandbox_status_release(&st);

    /* found by its label, READY; not found by another label */
    struct ck__cri_sandboxes l;
    struct ck__cri_filter f = {.state = CK__CRI_SANDBOX_READY, .labels = pod_labels, .n_labels = 1};
    if (ck__cri_list_sandboxes(cri, &f, &l, &err) < 0)
        fail_msg("ListPodSandbox: %s", err.msg);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.items[0].id, pod_id);
    assert_string_equal(l.items[0].ns, "default");
    ck__cri_sandboxes_release(&l);
    struct ck__cri_kv other = {"app", "none"};
    f = (struct ck__cri_filter){.state = -1, .labels = &other, .n_labels = 1};
    if (ck__cri_list_sandboxes(cri, &f, &l, &err) < 0)
        fail_msg("ListPodSandbox: %s", err.msg);
    assert_int_equal(l.n, 0);
    ck__cri_sandboxes_release(&l);
}

/* The busybox container's config. */
static void create_container(const char *name, const char *image, const char *const *command,
                             size_t n_command, char **ret_id)
{
    struct ck_err err = {0};
    static const struct ck__cri_kv envs[] = {{"GREETING", "hello from ckube"}};
    static struct ck__cri_mount mount = {.container_path = "/host", .readonly = true};
    mount.host_path = env("CKUBE_CRI_HOST_DIR");
    char log_path[64];
    snprintf(log_path, sizeof(log_path), "%s/0.log", name);
    struct ck__cri_kv labels[] = {{"io.kubernetes.container.name", (char *)name},
                                  {"io.kubernetes.pod.uid", pod_uid}};
    struct ck__cri_container_config ct = {.name = name,
                                          .image = image,
                                          .command = command,
                                          .n_command = n_command,
                                          .envs = envs,
                                          .n_envs = 1,
                                          .mounts = &mount,
                                          .n_mounts = 1,
                                          .labels = labels,
                                          .n_labels = 2,
                                          .log_path = log_path,
                                          .security = {.network = CK__CRI_NS_POD,
                                                       .pid = CK__CRI_NS_CONTAINER,
                                                       .ipc = CK__CRI_NS_POD,
                                                       .seccomp = CK__CRI_SECCOMP_UNSET}};
    if (ck__cri_create_container(cri, pod_id, &ct, &pod, ret_id, &err) < 0)
        fail_msg("CreateContainer %s: %s", name, err.msg);
    if (ck__cri_start_container(cri, *ret_id, &err) < 0)
        fail_msg("StartContainer %s: %s", name, err.msg);
}

/* Whether the file at path holds a line ending with suffix, within 10 s. */
static bool file_has_line(const char *path, const char *suffix)
{
    for (int64_t until = now_ms() + 10000; now_ms() < until; usleep(100000)) {
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        char line[1024];
        bool found = false;
        while (!found && fgets(line, sizeof(line), f)) {
            size_t n = strlen(line), k = strlen(suffix);
            found = n > k && strcmp(line + n - k, suffix) == 0;
        }
        fclose(f);
        if (found)
            return true;
    }
    return false;
}

static void test_container(void **state)
{
    (void)state;
    struct ck_err err = {0};
    assert_non_null(pod_id);
    static const char *const command[] = {"/bin/sh", "-c", "echo hello; echo err >&2; sleep 3600"};
    create_container("c", env("CKUBE_CRI_IMAGE"), command, 3, &ct_id);

    struct ck__cri_container_status st;
    if (ck__cri_container_status(cri, ct_id, &st, &err) < 0)
        fail_msg("ContainerStatus: %s", err.msg);
    assert_string_equal(st.id, ct_id);
    assert_string_equal(st.name, "c");
    assert_int_equal(st.state, CK__CRI_RUNNING);
    assert_true(st.created_at > 0);
    assert_true(st.started_at >= st.created_at);
    assert_int_equal(st.finished_at, 0);
    assert_string_equal(st.image, env("CKUBE_CRI_IMAGE"));
    assert_string_equal(st.image_ref, env("CKUBE_CRI_IMAGE_ID"));
    assert_string_equal(ck__cri_kv_get(st.labels, st.n_labels, "io.kubernetes.container.name"),
                        "c");
    char log[600];
    snprintf(log, sizeof(log), "%s/c/0.log", log_dir);
    assert_string_equal(st.log_path, log);
    ck__cri_container_status_release(&st);

    /* the CRI log format: "<RFC 3339 time> <stream> <F|P> <text>" */
    if (!file_has_line(log, " stdout F hello\n") || !file_has_line(log, " stderr F err\n"))
        fail_msg("%s lacks the container's output", log);
    FILE *f = fopen(log, "r");
    char line[256];
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_true(strlen(line) > 30 && line[4] == '-' && line[10] == 'T'); /* 2026-12-06T... */

    /* ExecSync: the env var, the hostPath mount, the exit code */
    static const char *const argv[] = {"sh", "-c", "echo $GREETING; cat /host/file; exit 3"};
    struct ck__cri_exec_result x;
    if (ck__cri_exec_sync(cri, ct_id, argv, 3, 10, &x, &err) < 0)
        fail_msg("ExecSync: %s", err.msg);
    assert_string_equal(x.out, "hello from ckube\nwhat the containers' hostPath mount shows\n");
    assert_int_equal(x.exit_code, 3);
    ck__cri_exec_result_release(&x);
    static const char *const to_stderr[] = {"sh", "-c", "echo oops >&2"};
    if (ck__cri_exec_sync(cri, ct_id, to_stderr, 3, 0, &x, &err) < 0)
        fail_msg("ExecSync: %s", err.msg);
    assert_string_equal(x.out, "");
    assert_string_equal(x.err, "oops\n");
    assert_int_equal(x.exit_code, 0);
    ck__cri_exec_result_release(&x);

    /* past its timeout: back within seconds, not after the command's 10 */
    static const char *const sleeper[] = {"sleep", "10"};
    int64_t t0 = now_ms();
    x = (struct ck__cri_exec_result){0};
    int r = ck__cri_exec_sync(cri, ct_id, sleeper, 2, 1, &x, &err);
    int64_t took = now_ms() - t0;
    print_message("ExecSync past its timeout: %d after %lld ms: %s\n", r, (long long)took,
                  r < 0 ? err.msg : "");
    assert_true(took >= 900 && took < 6000);
    assert_int_equal(r, CK_ETIMEDOUT); /* containerd's DeadlineExceeded */
    assert_non_null(strstr(err.msg, "code = DeadlineExceeded"));

    /* ListContainers by sandbox, and by sandbox and a state it is not in */
    struct ck__cri_containers l;
    struct ck__cri_filter filter = {.sandbox_id = pod_id, .state = -1};
    if (ck__cri_list_containers(cri, &filter, &l, &err) < 0)
        fail_msg("ListContainers: %s", err.msg);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.items[0].id, ct_id);
    assert_string_equal(l.items[0].sandbox_id, pod_id);
    assert_string_equal(l.items[0].name, "c");
    assert_int_equal(l.items[0].state, CK__CRI_RUNNING);
    ck__cri_containers_release(&l);
    filter.state = CK__CRI_EXITED;
    if (ck__cri_list_containers(cri, &filter, &l, &err) < 0)
        fail_msg("ListContainers: %s", err.msg);
    assert_int_equal(l.n, 0);
    ck__cri_containers_release(&l);
}

struct slow_exec {
    int r;
    int32_t exit_code;
    char msg[256];
};

/* An ExecSync that takes 2 s, from another thread. */
static void *slow_exec(void *arg)
{
    struct slow_exec *x = arg;
    static const char *const argv[] = {"sleep", "2"};
    struct ck__cri_exec_result res;
    struct ck_err err = {0};
    x->r = ck__cri_exec_sync(cri, ct_id, argv, 2, 10, &res, &err);
    if (x->r == 0) {
        x->exit_code = res.exit_code;
        ck__cri_exec_result_release(&res);
    }
    snprintf(x->msg, sizeof(x->msg), "%s", err.msg);
    return NULL;
}

/* While one thread's ExecSync waits, another thread's calls are answered. */
static void test_calls_side_by_side(void **state)
{
    (void)state;
    assert_non_null(ct_id);
    struct slow_exec x = {0};
    pthread_t t;
    int64_t t0 = now_ms();
    assert_int_equal(pthread_create(&t, NULL, slow_exec, &x), 0);
    usleep(300000); /* the ExecSync is under way */
    struct ck_err err = {0};
    for (int i = 0; i < 3; i++) {
        struct ck__cri_container_status st;
        if (ck__cri_container_status(cri, ct_id, &st, &err) < 0)
            fail_msg("ContainerStatus: %s", err.msg);
        assert_int_equal(st.state, CK__CRI_RUNNING);
        ck__cri_container_status_release(&st);
    }
    int64_t answered = now_ms() - t0;
    assert_int_equal(pthread_join(t, NULL), 0);
    int64_t took = now_ms() - t0;
    print_message("three ContainerStatus answered after %lld ms, the ExecSync after %lld ms\n",
                  (long long)answered, (long long)took);
    if (x.r < 0)
        fail_msg("ExecSync: %s", x.msg);
    assert_int_equal(x.exit_code, 0);
    assert_true(took >= 2000);
    assert_true(answered < 1500); /* not after the ExecSync's 2 s */
}

static void assert_stream_url(const char *what, int r, char *url, const struct ck_err *err)
{
    if (r < 0)
        fail_msg("%s: %s", what, err->msg);
    print_message("%s: %s\n", what, url);
    assert_memory_equal(url, "http://127.0.0.1:", 17);
    free(url);
}

static void test_streams_stats_and_log(void **state)
{
    (void)state;
    struct ck_err err = {0};
    assert_non_null(ct_id);
    char *url = NULL;
    static const char *const argv[] = {"sh"};
    struct ck__cri_streams streams = {.want_stdin = true, .want_stdout = true, .want_stderr = true};
    int r = ck__cri_exec(cri, ct_id, argv, 1, streams, &url, &err);
    assert_stream_url("Exec", r, url, &err);
    url = NULL;
    r = ck__cri_attach(cri, ct_id, streams, &url, &err);
    assert_stream_url("Attach", r, url, &err);
    url = NULL;
    static const int32_t ports[] = {8080};
    r = ck__cri_port_forward(cri, pod_id, ports, 1, &url, &err);
    assert_stream_url("PortForward", r, url, &err);

    struct ck__cri_container_stats st;
    if (ck__cri_container_stats(cri, ct_id, &st, &err) < 0)
        fail_msg("ContainerStats: %s", err.msg);
    assert_string_equal(st.id, ct_id);
    assert_string_equal(st.name, "c");
    assert_string_equal(ck__cri_kv_get(st.labels, st.n_labels, "io.kubernetes.pod.uid"), pod_uid);
    assert_true(st.has_memory);
    assert_true(st.working_set_bytes > 0);
    assert_true(st.has_cpu);
    print_message("working set %llu bytes, cpu %llu ns\n", (unsigned long long)st.working_set_bytes,
                  (unsigned long long)st.usage_core_nano_seconds);
    ck__cri_container_stats_release(&st);

    struct ck__cri_stats_list l;
    struct ck__cri_filter filter = {.sandbox_id = pod_id, .state = -1};
    if (ck__cri_list_container_stats(cri, &filter, &l, &err) < 0)
        fail_msg("ListContainerStats: %s", err.msg);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.items[0].id, ct_id);
    assert_true(l.items[0].has_memory && l.items[0].working_set_bytes > 0);
    ck__cri_stats_list_release(&l);

    /* the pod's own figures with its container's; containerd 1.6 may not have them */
    struct ck__cri_sandbox_stats_list sl;
    struct ck__cri_filter by_id = {.id = pod_id, .state = -1};
    if (ck__cri_list_sandbox_stats(cri, &by_id, &sl, &err) < 0) {
        print_message("ListPodSandboxStats not checked: %s\n", err.msg);
        ck_err_release(&err);
    } else {
        assert_int_equal(sl.n, 1);
        assert_string_equal(sl.items[0].id, pod_id);
        assert_string_equal(sl.items[0].uid, pod_uid);
        assert_true(sl.items[0].usage.has_memory && sl.items[0].usage.working_set_bytes > 0);
        print_message("pod working set %llu bytes, %zu containers\n",
                      (unsigned long long)sl.items[0].usage.working_set_bytes,
                      sl.items[0].n_containers);
        ck__cri_sandbox_stats_list_release(&sl);
    }

    if (ck__cri_reopen_container_log(cri, ct_id, &err) < 0)
        fail_msg("ReopenContainerLog: %s", err.msg);
}

static void test_stop_container(void **state)
{
    (void)state;
    struct ck_err err = {0};
    assert_non_null(ct_id);
    /* sh as PID 1 ignores SIGTERM: SIGKILL after the 2 s grace period */
    int64_t t0 = now_ms();
    if (ck__cri_stop_container(cri, ct_id, 2, &err) < 0)
        fail_msg("StopContainer: %s", err.msg);
    int64_t took = now_ms() - t0;
    print_message("StopContainer took %lld ms\n", (long long)took);
    assert_true(took < 10000);
    struct ck__cri_container_status st;
    if (ck__cri_container_status(cri, ct_id, &st, &err) < 0)
        fail_msg("ContainerStatus: %s", err.msg);
    assert_int_equal(st.state, CK__CRI_EXITED);
    print_message("exit code %d, reason %s\n", st.exit_code, st.reason ? st.reason : "");
    assert_true(st.exit_code == 137 || st.exit_code == 143);
    assert_true(st.finished_at >= st.started_at && st.finished_at > 0);
    ck__cri_container_status_release(&st);
}

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
    return ck__buf_add(arg, data, size * n) == 0 ? size * n : 0;
}

static void test_web_entrypoint(void **state)
{
    (void)state;
    struct ck_err err = {0};
    assert_non_null(pod_ip);
    create_container("web", env("CKUBE_CRI_WEB_IMAGE"), NULL, 0, &web_id);
    char url[128];
    snprintf(url, sizeof(url), "http://%s:8080/index.html", pod_ip);
    struct ck__buf body = {.max = 4096};
    long code = 0;
    /* the entrypoint starts httpd; it listens a moment later */
    for (int64_t until = now_ms() + 10000; code != 200 && now_ms() < until;) {
        CURL *h = curl_easy_init();
        assert_non_null(h);
        body.len = 0;
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 2000L);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
        if (curl_easy_perform(h) == CURLE_OK)
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_cleanup(h);
        if (code != 200)
            usleep(100000);
    }
    assert_int_equal(code, 200);
    assert_string_equal(body.p, "ckube web\n");
    ck__buf_release(&body);
    print_message("GET %s: ckube web\n", url);

    struct ck__cri_container_status st;
    if (ck__cri_container_status(cri, web_id, &st, &err) < 0)
        fail_msg("ContainerStatus: %s", err.msg);
    assert_int_equal(st.state, CK__CRI_RUNNING);
    ck__cri_container_status_release(&st);
}

static void test_remove(void **state)
{
    (void)state;
    struct ck_err err = {0};
    assert_non_null(web_id);
    if (ck__cri_stop_container(cri, web_id, 0, &err) < 0)
        fail_msg("StopContainer: %s", err.msg);
    const char *ids[] = {ct_id, web_id};
    for (int i = 0; i < 2; i++) {
        if (ck__cri_remove_container(cri, ids[i], &err) < 0)
            fail_msg("RemoveContainer: %s", err.msg);
        struct ck__cri_container_status st = {0};
        assert_int_equal(ck__cri_container_status(cri, ids[i], &st, &err), CK_ENOENT);
        assert_null(st.id);
        print_message("%s\n", err.msg);
        assert_non_null(strstr(err.msg, "code = NotFound"));
    }
    if (ck__cri_stop_sandbox(cri, pod_id, &err) < 0)
        fail_msg("StopPodSandbox: %s", err.msg);
    struct ck__cri_sandbox_status st;
    if (ck__cri_sandbox_status(cri, pod_id, &st, &err) < 0)
        fail_msg("PodSandboxStatus: %s", err.msg);
    assert_int_equal(st.sandbox.state, CK__CRI_SANDBOX_NOTREADY);
    ck__cri_sandbox_status_release(&st);
    if (ck__cri_remove_sandbox(cri, pod_id, &err) < 0)
        fail_msg("RemovePodSandbox: %s", err.msg);
    struct ck__cri_sandboxes l;
    struct ck__cri_filter f = {.state = -1, .labels = pod_labels, .n_labels = 1};
    if (ck__cri_list_sandboxes(cri, &f, &l, &err) < 0)
        fail_msg("ListPodSandbox: %s", err.msg);
    assert_int_equal(l.n, 0);
    ck__cri_sandboxes_release(&l);
    assert_int_equal(ck__cri_sandbox_status(cri, pod_id, &st, &err), CK_ENOENT);
    free(pod_id);
    free(pod_ip);
    free(ct_id);
    free(web_id);
    pod_id = pod_ip = ct_id = web_id = NULL;
}

static void test_host_network_sandbox(void **state)
{
    (void)state;
    struct ck_err err = {0};
    char uid[64], dir[600];
    snprintf(uid, sizeof(uid), "ckube-test-host-%ld", (long)getpid());
    snprintf(dir, sizeof(dir), "%s/default_host_%s", env("CKUBE_CRI_LOG_DIR"), uid);
    struct ck__cri_sandbox_config host = {.name = "host",
                                          .uid = uid,
                                          .ns = "default",
                                          .log_directory = dir,
                                          .cgroup_parent = env("CKUBE_CRI_CGROUP_PARENT"),
                                          .security = {.network = CK__CRI_NS_NODE,
                                                       .pid = CK__CRI_NS_CONTAINER,
                                                       .ipc = CK__CRI_NS_POD,
                                                       .seccomp = CK__CRI_SECCOMP_UNSET}};
    char *id = NULL;
    if (ck__cri_run_sandbox(cri, &host, NULL, 60000, &id, &err) < 0)
        fail_msg("RunPodSandbox (host network): %s", err.msg);
    struct ck__cri_sandbox_status st;
    if (ck__cri_sandbox_status(cri, id, &st, &err) < 0)
        fail_msg("PodSandboxStatus: %s", err.msg);
    assert_int_equal(st.sandbox.state, CK__CRI_SANDBOX_READY);
    assert_int_equal(st.network, CK__CRI_NS_NODE);
    assert_null(st.ip);
    ck__cri_sandbox_status_release(&st);
    if (ck__cri_stop_sandbox(cri, id, &err) < 0 || ck__cri_remove_sandbox(cri, id, &err) < 0)
        fail_msg("StopPodSandbox/RemovePodSandbox: %s", err.msg);
    free(id);
}

static void test_images(void **state)
{
    (void)state;
    const char *image = env("CKUBE_CRI_IMAGE");
    struct ck_err err = {0};
    assert_true(listed(image));

    struct ck__cri_image img;
    bool found = false;
    if (ck__cri_image_status(cri, image, &img, &found, &err) < 0)
        fail_msg("ImageStatus: %s", err.msg);
    assert_true(found);
    assert_string_equal(img.id, env("CKUBE_CRI_IMAGE_ID"));
    assert_true(img.size >= strtoull(env("CKUBE_CRI_IMAGE_MIN_SIZE"), NULL, 10));
    bool tagged = false;
    for (size_t t = 0; t < img.n_repo_tags; t++)
        tagged |= strcmp(img.repo_tags[t], image) == 0;
    assert_true(tagged);
    print_message("image %s, %llu bytes\n", img.id, (unsigned long long)img.size);
    ck__cri_image_release(&img);

    struct ck__cri_fs_info f;
    if (ck__cri_image_fs_info(cri, &f, &err) < 0)
        fail_msg("ImageFsInfo: %s", err.msg);
    assert_true(f.n_image_fs >= 1);
    const char *root = env("CKUBE_CRI_ROOT");
    assert_non_null(f.image_fs[0].mountpoint);
    assert_memory_equal(f.image_fs[0].mountpoint, root, strlen(root));
    assert_true(f.image_fs[0].has_used_bytes);
    print_message("image filesystem %s, %llu bytes used\n", f.image_fs[0].mountpoint,
                  (unsigned long long)f.image_fs[0].used_bytes);
    ck__cri_fs_info_release(&f);

    if (ck__cri_remove_image(cri, image, &err) < 0)
        fail_msg("RemoveImage: %s", err.msg);
    assert_false(listed(image));
    found = true;
    if (ck__cri_image_status(cri, image, &img, &found, &err) < 0)
        fail_msg("ImageStatus after removal: %s", err.msg);
    assert_false(found);
    /* removing what is not there succeeds (CRI: "must not return an error") */
    if (ck__cri_remove_image(cri, image, &err) < 0)
        fail_msg("RemoveImage again: %s", err.msg);
}

static void test_pull_from_nowhere(void **state)
{
    (void)state;
    struct ck_err err = {0};
    char *ref = NULL;
    /* loopback port 1: nothing serves it, and nothing leaves the machine */
    int r = ck__cri_pull_image(cri, "127.0.0.1:1/none:latest", NULL, 30000, &ref, &err);
    print_message("PullImage: %s\n", err.msg);
    assert_int_equal(r, CK_EIO);
    assert_null(ref);
    /* containerd's words are long: the service and method make way for their end */
    assert_true(strncmp(err.msg, "cri: ImageService PullImage: rpc error: code = ", 47) == 0 ||
                strncmp(err.msg, "rpc error: code = Unknown desc = ", 33) == 0);
    assert_non_null(strstr(err.msg, "127.0.0.1:1"));
    if (strlen(err.msg) < sizeof(err.msg) - 1) /* not cut: the dial's error at the end */
        assert_non_null(strstr(err.msg, "connection refused"));
    assert_false(listed("127.0.0.1:1/none:latest"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_and_status),
        cmocka_unit_test(test_run_sandbox),
        cmocka_unit_test(test_container),
        cmocka_unit_test(test_calls_side_by_side),
        cmocka_unit_test(test_streams_stats_and_log),
        cmocka_unit_test(test_stop_container),
        cmocka_unit_test(test_web_entrypoint),
        cmocka_unit_test(test_remove),
        cmocka_unit_test(test_host_network_sandbox),
        cmocka_unit_test(test_images),
        cmocka_unit_test(test_pull_from_nowhere),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
