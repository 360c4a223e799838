/*
 * test_cri.c - the CRI client's messages (lib/agent/cri.c) against bytes
 * protoc wrote from cri-api's api.proto (tests/data/cri, generate.sh there):
 * each request the client writes is byte for byte what `protoc --encode`
 * makes of the same message, and each answer protoc encoded decodes to the
 * values in its text form, fields the client does not read (maps, runtime
 * handlers, features, an image's spec) skipped. Then what a hostile runtime
 * could send: every truncation of every answer, a string with a NUL, a field
 * of the wrong wire type, a length past the end; allocation failures while
 * decoding; the errors of failed calls (gRPC status as Go prints it); and a
 * call to a socket nobody serves. Calls against a real containerd are
 * tests/agent/test_cri_containerd.sh's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/agent/internal.h"
#include "ckube/internal/util.h"

/* A fixture's bytes (the caller releases them). */
static struct ck__buf fixture(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.bin", CKUBE_CRI_DATA, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    struct ck__buf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        assert_int_equal(ck__buf_add(&b, chunk, n), 0);
    fclose(f);
    assert_true(b.len > 0);
    return b;
}

static struct ck__pb_reader reader(const struct ck__buf *b)
{
    return (struct ck__pb_reader){(const unsigned char *)b->p,
                                  (const unsigned char *)b->p + b->len};
}

static void assert_encodes_as(struct ck__buf *got, const char *name)
{
    struct ck__buf want = fixture(name);
    assert_int_equal(got->err, 0);
    assert_int_equal(got->len, want.len);
    assert_memory_equal(got->p, want.p, want.len);
    ck__buf_release(&want);
    ck__buf_release(got);
}

static void test_requests_match_protoc(void **state)
{
    (void)state;
    struct ck__buf b = {0};
    ck__cri_encode_version(&b, "0.1.0");
    assert_encodes_as(&b, "version_request");
    ck__cri_encode_status(&b, true);
    assert_encodes_as(&b, "status_request");
    ck__cri_encode_list_images(&b, "docker.io/library/busybox:latest");
    assert_encodes_as(&b, "list_images_request");
    ck__cri_encode_image_status(&b, "example.test/busybox:1.35", true);
    assert_encodes_as(&b, "image_status_request");
    struct ck__cri_auth auth = {.username = "user",
                                .password = "secret",
                                .auth = "dXNlcjpzZWNyZXQ=",
                                .server_address = "example.test",
                                .identity_token = "id-token",
                                .registry_token = "reg-token"};
    ck__cri_encode_pull_image(&b, "example.test/app:v1", &auth);
    assert_encodes_as(&b, "pull_image_request");
    ck__cri_encode_remove_image(&b, "sha256:77");
    assert_encodes_as(&b, "remove_image_request");
    /* defaults are left out, as proto3 (and protoc) write them */
    ck__cri_encode_status(&b, false);
    ck__cri_encode_list_images(&b, NULL);
    ck__cri_encode_version(&b, NULL);
    assert_int_equal(b.len, 0);
    ck__cri_encode_pull_image(&b, "x", NULL); /* no auth: just the spec, 1 { 1: "x" } */
    assert_int_equal(b.len, 5);
    assert_memory_equal(b.p, "\x0a\x03\x0a\x01x", 5);
    ck__buf_release(&b);
}

/* The sandbox of run_pod_sandbox_request.txtpb. */
static const struct ck__cri_kv SB_LABELS[] = {{"app", "web"}, {"io.kubernetes.pod.name", "web-0"}};
static const struct ck__cri_kv SB_ANNOTATIONS[] = {{"empty", ""},
                                                   {"kubernetes.io/config.source", "api"}};
static const char *const DNS_SERVERS[] = {"10.96.0.10"};
static const char *const DNS_SEARCHES[] = {"default.svc.cluster.local", "svc.cluster.local"};
static const char *const DNS_OPTIONS[] = {"ndots:5"};
static const struct ck__cri_port_mapping PORTS[] = {
    {.protocol = 0, .container_port = 8080, .host_port = 30080, .host_ip = "127.0.0.1"},
    {.protocol = 1, .container_port = 53}};
static const int64_t SB_GROUPS[] = {2000, 3000};
static const struct ck__cri_kv SYSCTLS[] = {{"net.ipv4.ip_unprivileged_port_start", "0"}};

static struct ck__cri_sandbox_config sandbox_config(void)
{
    return (struct ck__cri_sandbox_config){
        .name = "web-0",
        .uid = "0b5c3e1a-7d2f-4c8e-9a61-2f4d8e6b1c09",
        .ns = "default",
        .attempt = 1,
        .hostname = "web-0",
        .log_directory = "/var/log/pods/default_web-0_0b5c3e1a-7d2f-4c8e-9a61-2f4d8e6b1c09",
        .dns_servers = DNS_SERVERS,
        .n_dns_servers = 1,
        .dns_searches = DNS_SEARCHES,
        .n_dns_searches = 2,
        .dns_options = DNS_OPTIONS,
        .n_dns_options = 1,
        .port_mappings = PORTS,
        .n_port_mappings = 2,
        .labels = SB_LABELS,
        .n_labels = 2,
        .annotations = SB_ANNOTATIONS,
        .n_annotations = 2,
        .cgroup_parent = "/kubepods/besteffort/pod0b5c3e1a-7d2f-4c8e-9a61-2f4d8e6b1c09",
        .security = {.network = CK__CRI_NS_NODE,
                     .pid = CK__CRI_NS_CONTAINER,
                     .ipc = CK__CRI_NS_POD,
                     .has_run_as_user = true,
                     .run_as_user = 1000,
                     .has_run_as_group = true,
                     .run_as_group = 0, /* present though 0: Int64Value {} */
                     .readonly_rootfs = true,
                     .supplemental_groups = SB_GROUPS,
                     .n_supplemental_groups = 2,
                     .seccomp = CK__CRI_SECCOMP_RUNTIME_DEFAULT, /* present though 0 */
                     /* a container's own: a sandbox's encoding leaves them out */
                     .run_as_username = "ignored",
                     .no_new_privs = true},
        .sysctls = SYSCTLS,
        .n_sysctls = 1};
}

static void test_sandbox_and_container_requests_match_protoc(void **state)
{
    (void)state;
    struct ck__buf b = {0};
    struct ck__cri_sandbox_config sb = sandbox_config();
    ck__cri_encode_run_sandbox(&b, &sb, "runc");
    assert_encodes_as(&b, "run_pod_sandbox_request");

    static const char *const command[] = {"/bin/sh", "-c"};
    static const char *const args[] = {"echo $GREETING; sleep 3600"};
    static const struct ck__cri_kv envs[] = {{"GREETING", "hello"}, {"EMPTY", ""}};
    static const struct ck__cri_mount mounts[] = {
        {.container_path = "/data", .host_path = "/var/lib/ckube/pods/0b5c/volumes/data"},
        {.container_path = "/etc/hosts",
         .host_path = "/var/lib/ckube/pods/0b5c/etc-hosts",
         .readonly = true,
         .propagation = 1}};
    static const struct ck__cri_kv labels[] = {{"io.kubernetes.container.name", "app"}};
    static const struct ck__cri_kv annotations[] = {{"io.kubernetes.container.restartCount", "2"}};
    static const char *const add[] = {"NET_ADMIN"}, *const drop[] = {"ALL", "KILL"};
    static const int64_t groups[] = {1};
    static const char *const masked[] = {"/proc/kcore"};
    static const char *const readonly[] = {"/proc/sys", "/proc/bus"};
    struct ck__cri_container_config ct = {
        .name = "app",
        .attempt = 2,
        .image = "sha256:77",
        .command = command,
        .n_command = 2,
        .args = args,
        .n_args = 1,
        .working_dir = "/work",
        .envs = envs,
        .n_envs = 2,
        .mounts = mounts,
        .n_mounts = 2,
        .labels = labels,
        .n_labels = 1,
        .annotations = annotations,
        .n_annotations = 1,
        .log_path = "app/2.log",
        .open_stdin = true,
        .stdin_once = true,
        .tty = true,
        .has_resources = true,
        .resources = {.cpu_period = 100000,
                      .cpu_quota = 50000,
                      .cpu_shares = 512,
                      .memory_limit_in_bytes = 134217728,
                      .oom_score_adj = -997,
                      .memory_swap_limit_in_bytes = 134217728},
        .security = {.add_capabilities = add,
                     .n_add_capabilities = 1,
                     .drop_capabilities = drop,
                     .n_drop_capabilities = 2,
                     .privileged = true,
                     .network = CK__CRI_NS_POD,
                     .pid = CK__CRI_NS_CONTAINER,
                     .ipc = CK__CRI_NS_POD,
                     .has_run_as_user = true,
                     .run_as_user = 65534,
                     .run_as_username = "nobody",
                     .readonly_rootfs = true,
                     .supplemental_groups = groups,
                     .n_supplemental_groups = 1,
                     .no_new_privs = true,
                     .has_run_as_group = true,
                     .run_as_group = 65534,
                     .masked_paths = masked,
                     .n_masked_paths = 1,
                     .readonly_paths = readonly,
                     .n_readonly_paths = 2,
                     .seccomp = CK__CRI_SECCOMP_LOCALHOST,
                     .seccomp_localhost_ref = "profiles/audit.json"}};
    /* the sandbox's config as CreateContainer repeats it: the least there is */
    struct ck__cri_sandbox_config least = {
        .name = "web-0", .uid = "0b5c", .ns = "default", .security.seccomp = CK__CRI_SECCOMP_UNSET};
    ck__cri_encode_create_container(&b, "5f0c9d1e2a3b", &ct, &least);
    assert_encodes_as(&b, "create_container_request");

    static const struct ck__cri_kv selector[] = {{"io.kubernetes.container.name", "app"},
                                                 {"io.kubernetes.pod.uid", "0b5c"}};
    struct ck__cri_filter f = {
        .sandbox_id = "5f0c9d1e2a3b", .state = CK__CRI_RUNNING, .labels = selector, .n_labels = 2};
    ck__cri_encode_list_containers(&b, &f);
    assert_encodes_as(&b, "list_containers_request");
    /* a state of 0 (READY) is sent as a present, empty PodSandboxStateValue */
    static const struct ck__cri_kv app[] = {{"app", "web"}};
    f = (struct ck__cri_filter){
        .id = "5f0c9d1e2a3b", .state = CK__CRI_SANDBOX_READY, .labels = app, .n_labels = 1};
    ck__cri_encode_list_sandboxes(&b, &f);
    assert_encodes_as(&b, "list_pod_sandbox_request");
    /* ContainerStatsFilter has no state: it is left out */
    f = (struct ck__cri_filter){.sandbox_id = "5f0c9d1e2a3b",
                                .state = CK__CRI_RUNNING,
                                .labels = selector + 1,
                                .n_labels = 1};
    ck__cri_encode_list_container_stats(&b, &f);
    assert_encodes_as(&b, "list_container_stats_request");
    /* PodSandboxStatsFilter has neither state nor sandbox: its id is the sandbox's */
    f = (struct ck__cri_filter){.id = "5f0c9d1e2a3b",
                                .sandbox_id = "ignored",
                                .state = CK__CRI_RUNNING,
                                .labels = selector + 1,
                                .n_labels = 1};
    ck__cri_encode_list_sandbox_stats(&b, &f);
    assert_encodes_as(&b, "list_pod_sandbox_stats_request");

    static const char *const argv[] = {"sh", "-c", "echo $VAR; exit 3"};
    ck__cri_encode_exec_sync(&b, "c0ffee", argv, 3, 5);
    assert_encodes_as(&b, "exec_sync_request");
    ck__cri_encode_exec(
        &b, "c0ffee", argv, 1,
        (struct ck__cri_streams){.want_stdin = true, .want_stdout = true, .want_stderr = true});
    assert_encodes_as(&b, "exec_request");
    ck__cri_encode_attach(
        &b, "c0ffee",
        (struct ck__cri_streams){.tty = true, .want_stdin = true, .want_stdout = true});
    assert_encodes_as(&b, "attach_request");
    static const int32_t ports[] = {80, 8080};
    ck__cri_encode_port_forward(&b, "5f0c9d1e2a3b", ports, 2);
    assert_encodes_as(&b, "port_forward_request");
    ck__cri_encode_stop_container(&b, "c0ffee", 30);
    assert_encodes_as(&b, "stop_container_request");

    /* no filter: an empty request; a filter with nothing set: an empty filter */
    ck__cri_encode_list_containers(&b, NULL);
    assert_int_equal(b.len, 0);
    f = (struct ck__cri_filter){.state = -1};
    ck__cri_encode_list_containers(&b, &f);
    assert_int_equal(b.len, 2);
    assert_memory_equal(b.p, "\x0a\x00", 2);
    ck__buf_release(&b);
}

static void test_version_response(void **state)
{
    (void)state;
    struct ck__buf b = fixture("version_response");
    struct ck__cri_version v;
    assert_int_equal(ck__cri_decode_version(reader(&b), &v), 0);
    assert_string_equal(v.version, "0.1.0");
    assert_string_equal(v.runtime_name, "containerd");
    assert_string_equal(v.runtime_version, "1.6.20~ds1");
    assert_string_equal(v.runtime_api_version, "v1");
    ck__cri_version_release(&v);
    ck__buf_release(&b);
}

static void test_status_response(void **state)
{
    (void)state;
    struct ck__buf b = fixture("status_response");
    struct ck__cri_status s;
    assert_int_equal(ck__cri_decode_status(reader(&b), &s), 0);
    assert_int_equal(s.n_conditions, 2);
    const struct ck__cri_condition *rt = ck__cri_status_condition(&s, "RuntimeReady");
    const struct ck__cri_condition *net = ck__cri_status_condition(&s, "NetworkReady");
    assert_non_null(rt);
    assert_true(rt->status);
    assert_null(rt->reason);
    assert_non_null(net);
    assert_false(net->status);
    assert_string_equal(net->reason, "NetworkPluginNotReady");
    assert_string_equal(net->message, "Network plugin returns error: cni plugin not initialized");
    assert_null(ck__cri_status_condition(&s, "Other"));
    assert_int_equal(s.n_info, 1);
    assert_string_equal(ck__cri_kv_get(s.info, s.n_info, "config"), "{}");
    ck__cri_status_release(&s);
    ck__buf_release(&b);
}

static void test_list_images_response(void **state)
{
    (void)state;
    struct ck__buf b = fixture("list_images_response");
    struct ck__cri_images l;
    assert_int_equal(ck__cri_decode_list_images(reader(&b), &l), 0);
    assert_int_equal(l.n, 2);
    struct ck__cri_image *a = &l.items[0], *z = &l.items[1];
    assert_string_equal(a->id,
                        "sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9");
    assert_int_equal(a->n_repo_tags, 2);
    assert_string_equal(a->repo_tags[0], "docker.io/library/busybox:latest");
    assert_string_equal(a->repo_tags[1], "example.test/busybox:1.35");
    assert_int_equal(a->n_repo_digests, 1);
    assert_string_equal(a->repo_digests[0], "docker.io/library/busybox@sha256:"
                                            "ffeeddccbbaa99887766554433221100ffeeddccbbaa9988776655"
                                            "4433221100");
    assert_int_equal(a->size, 1234567);
    assert_true(a->has_uid); /* uid {value: 0}: an empty message, still present */
    assert_int_equal(a->uid, 0);
    assert_null(a->username);
    assert_true(a->pinned);
    assert_string_equal(z->id, "sha256:99");
    assert_int_equal(z->n_repo_tags, 0);
    assert_true(z->size == UINT64_MAX);
    assert_false(z->has_uid);
    assert_string_equal(z->username, "nobody");
    assert_false(z->pinned);
    ck__cri_images_release(&l);
    ck__buf_release(&b);
}

static void test_image_status_response(void **state)
{
    (void)state;
    struct ck__buf b = fixture("image_status_response");
    struct ck__cri_image img;
    bool found = false;
    assert_int_equal(ck__cri_decode_image_status(reader(&b), &img, &found), 0);
    assert_true(found);
    assert_string_equal(img.id, "sha256:77");
    assert_int_equal(img.n_repo_tags, 1);
    assert_string_equal(img.repo_tags[0], "example.test/busybox:1.35");
    assert_int_equal(img.size, 1048576);
    assert_true(img.has_uid);
    assert_int_equal(img.uid, 65534);
    ck__cri_image_release(&img);
    ck__buf_release(&b);
    /* an image the runtime does not have: an empty ImageStatusResponse */
    struct ck__pb_reader none = {(const unsigned char *)"", (const unsigned char *)""};
    assert_int_equal(ck__cri_decode_image_status(none, &img, &found), 0);
    assert_false(found);
    assert_null(img.id);
}

static void test_pull_and_fs_info_responses(void **state)
{
    (void)state;
    struct ck__buf b = fixture("pull_image_response");
    char *ref = NULL;
    assert_int_equal(ck__cri_decode_pull_image(reader(&b), &ref), 0);
    assert_string_equal(ref, "sha256:5e5e");
    free(ref);
    ck__buf_release(&b);

    b = fixture("image_fs_info_response");
    struct ck__cri_fs_info f;
    assert_int_equal(ck__cri_decode_fs_info(reader(&b), &f), 0);
    assert_int_equal(f.n_image_fs, 1);
    assert_int_equal(f.n_container_fs, 1);
    assert_true(f.image_fs[0].timestamp == 1765000000000000000LL);
    assert_string_equal(f.image_fs[0].mountpoint,
                        "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs");
    assert_true(f.image_fs[0].has_used_bytes);
    assert_int_equal(f.image_fs[0].used_bytes, 4096000);
    assert_true(f.image_fs[0].has_inodes_used);
    assert_int_equal(f.image_fs[0].inodes_used, 321);
    assert_true(f.container_fs[0].timestamp == -1); /* int64 as ten varint bytes */
    assert_string_equal(f.container_fs[0].mountpoint, "/var/lib/containerd");
    assert_false(f.container_fs[0].has_used_bytes);
    assert_false(f.container_fs[0].has_inodes_used);
    ck__cri_fs_info_release(&f);
    ck__buf_release(&b);
}

static void test_sandbox_answers(void **state)
{
    (void)state;
    struct ck__buf b = fixture("run_pod_sandbox_response");
    char *id = NULL;
    assert_int_equal(ck__cri_decode_id(reader(&b), &id), 0);
    assert_string_equal(id, "5f0c9d1e2a3b");
    free(id);
    ck__buf_release(&b);

    b = fixture("pod_sandbox_status_response");
    struct ck__cri_sandbox_status st;
    assert_int_equal(ck__cri_decode_sandbox_status(reader(&b), &st), 0);
    assert_string_equal(st.sandbox.id, "5f0c9d1e2a3b");
    assert_string_equal(st.sandbox.name, "web-0");
    assert_string_equal(st.sandbox.uid, "0b5c");
    assert_string_equal(st.sandbox.ns, "default");
    assert_int_equal(st.sandbox.attempt, 1);
    assert_int_equal(st.sandbox.state, CK__CRI_SANDBOX_READY);
    assert_true(st.sandbox.created_at == 1765000000123456789LL);
    assert_string_equal(st.ip, "10.244.7.5");
    assert_int_equal(st.n_additional_ips, 1);
    assert_string_equal(st.additional_ips[0], "fd00:10:244:7::5");
    assert_int_equal(st.network, CK__CRI_NS_POD);
    assert_int_equal(st.pid, CK__CRI_NS_CONTAINER);
    assert_int_equal(st.ipc, CK__CRI_NS_NODE);
    assert_int_equal(st.sandbox.n_labels, 2);
    assert_string_equal(ck__cri_kv_get(st.sandbox.labels, st.sandbox.n_labels, "app"), "web");
    assert_string_equal(
        ck__cri_kv_get(st.sandbox.labels, st.sandbox.n_labels, "io.kubernetes.pod.name"), "web-0");
    assert_null(ck__cri_kv_get(st.sandbox.labels, st.sandbox.n_labels, "web"));
    assert_string_equal(ck__cri_kv_get(st.sandbox.annotations, st.sandbox.n_annotations,
                                       "kubernetes.io/config.source"),
                        "api");
    assert_string_equal(st.sandbox.runtime_handler, "runc");
    ck__cri_sandbox_status_release(&st);
    ck__buf_release(&b);

    b = fixture("list_pod_sandbox_response");
    struct ck__cri_sandboxes l;
    assert_int_equal(ck__cri_decode_list_sandboxes(reader(&b), &l), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.items[0].id, "5f0c9d1e2a3b");
    assert_string_equal(l.items[0].name, "web-0");
    assert_int_equal(l.items[0].state, CK__CRI_SANDBOX_READY);
    assert_string_equal(ck__cri_kv_get(l.items[0].labels, l.items[0].n_labels, "app"), "web");
    /* a map entry whose value is "": present, and "" */
    assert_string_equal(ck__cri_kv_get(l.items[0].annotations, l.items[0].n_annotations, "empty"),
                        "");
    assert_string_equal(l.items[0].runtime_handler, "runc");
    assert_string_equal(l.items[1].id, "77aa");
    assert_string_equal(l.items[1].ns, "batch");
    assert_int_equal(l.items[1].attempt, 0);
    assert_int_equal(l.items[1].state, CK__CRI_SANDBOX_NOTREADY);
    assert_true(l.items[1].created_at == 1765000000000000000LL);
    assert_int_equal(l.items[1].n_labels, 0);
    assert_null(l.items[1].runtime_handler);
    ck__cri_sandboxes_release(&l);
    ck__buf_release(&b);
}

static void test_container_answers(void **state)
{
    (void)state;
    struct ck__buf b = fixture("list_containers_response");
    struct ck__cri_containers l;
    assert_int_equal(ck__cri_decode_list_containers(reader(&b), &l), 0);
    assert_int_equal(l.n, 2);
    struct ck__cri_container *a = &l.items[0], *z = &l.items[1];
    assert_string_equal(a->id, "c0ffee");
    assert_string_equal(a->sandbox_id, "5f0c9d1e2a3b");
    assert_string_equal(a->name, "app");
    assert_int_equal(a->attempt, 2);
    assert_string_equal(a->image, "sha256:77");
    assert_string_equal(a->image_ref, "ckube.local/busybox@sha256:88");
    assert_string_equal(a->image_id, "sha256:77");
    assert_int_equal(a->state, CK__CRI_RUNNING);
    assert_true(a->created_at == 1765000002000000000LL);
    assert_int_equal(a->n_labels, 2);
    assert_string_equal(ck__cri_kv_get(a->labels, a->n_labels, "io.kubernetes.pod.uid"), "0b5c");
    assert_string_equal(
        ck__cri_kv_get(a->annotations, a->n_annotations, "io.kubernetes.container.restartCount"),
        "2");
    assert_string_equal(z->id, "deadbeef");
    assert_int_equal(z->state, CK__CRI_EXITED);
    assert_null(z->image);
    assert_int_equal(z->created_at, 1);
    ck__cri_containers_release(&l);
    ck__buf_release(&b);

    b = fixture("container_status_response");
    struct ck__cri_container_status st;
    assert_int_equal(ck__cri_decode_container_status(reader(&b), &st), 0);
    assert_string_equal(st.id, "c0ffee");
    assert_string_equal(st.name, "app");
    assert_int_equal(st.attempt, 2);
    assert_int_equal(st.state, CK__CRI_EXITED);
    assert_true(st.created_at == 1765000002000000000LL);
    assert_true(st.started_at == 1765000003000000000LL);
    assert_true(st.finished_at == 1765000009000000000LL);
    assert_int_equal(st.exit_code, 137);
    assert_string_equal(st.image, "ckube.local/busybox:1");
    assert_string_equal(st.image_ref, "ckube.local/busybox@sha256:88");
    assert_string_equal(st.image_id, "sha256:77");
    assert_string_equal(st.reason, "Error");
    assert_string_equal(st.message, "killed");
    assert_string_equal(ck__cri_kv_get(st.labels, st.n_labels, "io.kubernetes.container.name"),
                        "app");
    assert_int_equal(st.n_annotations, 1);
    assert_string_equal(st.log_path, "/var/log/pods/default_web-0_0b5c/app/2.log");
    ck__cri_container_status_release(&st);
    ck__buf_release(&b);

    b = fixture("exec_sync_response");
    struct ck__cri_exec_result x;
    assert_int_equal(ck__cri_decode_exec_sync(reader(&b), &x), 0);
    assert_int_equal(x.out_len, 12); /* bytes: the NUL is kept */
    assert_memory_equal(x.out, "hello\0world\n", 13);
    assert_int_equal(x.err_len, 5);
    assert_string_equal(x.err, "warn\n");
    assert_int_equal(x.exit_code, -1); /* int32 as ten varint bytes */
    ck__cri_exec_result_release(&x);
    ck__buf_release(&b);
    /* an ExecSyncResponse with nothing in it: empty outputs, exit code 0 */
    struct ck__pb_reader none = {(const unsigned char *)"", (const unsigned char *)""};
    assert_int_equal(ck__cri_decode_exec_sync(none, &x), 0);
    assert_string_equal(x.out, "");
    assert_int_equal(x.out_len, 0);
    assert_string_equal(x.err, "");
    assert_int_equal(x.exit_code, 0);
    ck__cri_exec_result_release(&x);

    b = fixture("exec_response");
    char *url = NULL;
    assert_int_equal(ck__cri_decode_id(reader(&b), &url), 0);
    assert_string_equal(url, "http://127.0.0.1:35219/exec/AbCdEf12");
    free(url);
    ck__buf_release(&b);
    /* an answer without its URL (or id) is no answer */
    url = NULL;
    assert_int_equal(ck__cri_decode_id(none, &url), CK_EIO);
    assert_null(url);
}

static void test_stats_answers(void **state)
{
    (void)state;
    struct ck__buf b = fixture("list_container_stats_response");
    struct ck__cri_stats_list l;
    assert_int_equal(ck__cri_decode_list_container_stats(reader(&b), &l), 0);
    assert_int_equal(l.n, 2);
    struct ck__cri_container_stats *a = &l.items[0], *z = &l.items[1];
    assert_string_equal(a->id, "c0ffee");
    assert_string_equal(a->name, "app");
    assert_string_equal(ck__cri_kv_get(a->labels, a->n_labels, "io.kubernetes.pod.uid"), "0b5c");
    assert_true(a->has_cpu);
    assert_true(a->timestamp == 1765000010000000000LL);
    assert_int_equal(a->usage_core_nano_seconds, 123456789);
    assert_int_equal(a->usage_nano_cores, 0);
    assert_true(a->has_memory);
    assert_int_equal(a->working_set_bytes, 1572864);
    assert_int_equal(a->rss_bytes, 524288);
    assert_string_equal(z->id, "deadbeef");
    assert_string_equal(z->name, "init");
    assert_false(z->has_cpu);
    assert_false(z->has_memory);
    ck__cri_stats_list_release(&l);
    ck__buf_release(&b);

    b = fixture("container_stats_response");
    struct ck__cri_container_stats st;
    assert_int_equal(ck__cri_decode_container_stats(reader(&b), &st), 0);
    assert_string_equal(st.id, "c0ffee");
    assert_false(st.has_cpu);
    assert_true(st.has_memory);
    assert_int_equal(st.working_set_bytes, 4096);
    ck__cri_container_stats_release(&st);
    ck__buf_release(&b);

    /* a pod's own figures, its containers', network, process and Windows stats skipped */
    b = fixture("list_pod_sandbox_stats_response");
    struct ck__cri_sandbox_stats_list sl;
    assert_int_equal(ck__cri_decode_list_sandbox_stats(reader(&b), &sl), 0);
    assert_int_equal(sl.n, 2);
    struct ck__cri_sandbox_stats *web = &sl.items[0], *idle = &sl.items[1];
    assert_string_equal(web->id, "5f0c9d1e2a3b");
    assert_string_equal(web->name, "web");
    assert_string_equal(web->uid, "0b5c");
    assert_string_equal(web->ns, "default");
    assert_string_equal(ck__cri_kv_get(web->labels, web->n_labels, "io.kubernetes.pod.uid"),
                        "0b5c");
    assert_true(web->usage.has_cpu && web->usage.has_memory);
    assert_true(web->usage.timestamp == 1765000010000000000LL);
    assert_int_equal(web->usage.usage_core_nano_seconds, 987654321);
    assert_int_equal(web->usage.usage_nano_cores, 5000000);
    assert_int_equal(web->usage.working_set_bytes, 3145728);
    assert_int_equal(web->usage.rss_bytes, 1048576);
    assert_int_equal(web->n_containers, 2);
    assert_string_equal(web->containers[0].id, "c0ffee");
    assert_string_equal(web->containers[0].name, "app");
    assert_int_equal(web->containers[0].usage_core_nano_seconds, 123456789);
    assert_int_equal(web->containers[0].working_set_bytes, 1572864);
    assert_string_equal(web->containers[1].name, "side");
    assert_false(web->containers[1].has_cpu);
    assert_string_equal(idle->ns, "kube-system");
    assert_false(idle->usage.has_cpu || idle->usage.has_memory);
    assert_int_equal(idle->n_containers, 0);
    ck__cri_sandbox_stats_list_release(&sl);
    ck__buf_release(&b);

    b = fixture("pod_sandbox_stats_response");
    struct ck__cri_sandbox_stats sst;
    assert_int_equal(ck__cri_decode_sandbox_stats(reader(&b), &sst), 0);
    assert_string_equal(sst.name, "web");
    assert_false(sst.usage.has_cpu);
    assert_true(sst.usage.has_memory);
    assert_int_equal(sst.usage.working_set_bytes, 8192);
    ck__cri_sandbox_stats_release(&sst);
    ck__buf_release(&b);
}

/*
 * A status without what kubelet requires of one (cri-client's verifySandboxStatus and
 * verifyContainerStatus) is refused; so is a ContainerStatsResponse without stats.
 */
static void test_incomplete_statuses_refused(void **state)
{
    (void)state;
    struct ck__cri_sandbox_status sb;
    struct ck__cri_container_status ct;
    struct ck__cri_container_stats st;
#define R(s)                                                                                       \
    ((struct ck__pb_reader){(const unsigned char *)(s), (const unsigned char *)(s) + sizeof(s) - 1})
    /* no status at all */
    assert_int_equal(ck__cri_decode_sandbox_status(R(""), &sb), CK_EIO);
    assert_int_equal(ck__cri_decode_container_status(R(""), &ct), CK_EIO);
    assert_int_equal(ck__cri_decode_container_stats(R(""), &st), CK_EIO);
    /* status {id: "s" metadata {name: "n" uid: "u" namespace: "d"} created_at: 1} is whole */
    assert_int_equal(ck__cri_decode_sandbox_status(R("\x0a\x10\x0a\x01s"
                                                     "\x12\x09\x0a\x01n\x12\x01u\x1a\x01"
                                                     "d"
                                                     "\x20\x01"),
                                                   &sb),
                     0);
    assert_string_equal(sb.sandbox.ns, "d");
    assert_null(sb.ip); /* no network: no IP */
    ck__cri_sandbox_status_release(&sb);
    /* ... and refused without its creation time, or without its uid */
    assert_int_equal(ck__cri_decode_sandbox_status(R("\x0a\x0e\x0a\x01s"
                                                     "\x12\x09\x0a\x01n\x12\x01u\x1a\x01"
                                                     "d"),
                                                   &sb),
                     CK_EIO);
    assert_int_equal(ck__cri_decode_sandbox_status(R("\x0a\x0d\x0a\x01s"
                                                     "\x12\x06\x0a\x01n\x1a\x01"
                                                     "d"
                                                     "\x20\x01"),
                                                   &sb),
                     CK_EIO);
    /* status {id: "c" metadata {name: "n"} created_at: 1 image {image: "i"}}: no image_ref */
    assert_int_equal(
        ck__cri_decode_container_status(R("\x0a\x0f\x0a\x01"
                                          "c"
                                          "\x12\x03\x0a\x01n\x20\x01\x42\x03\x0a\x01i"),
                                        &ct),
        CK_EIO);
    /* ... which, with image_ref "r", is whole */
    assert_int_equal(
        ck__cri_decode_container_status(R("\x0a\x12\x0a\x01"
                                          "c"
                                          "\x12\x03\x0a\x01n\x20\x01\x42\x03\x0a\x01i\x4a\x01r"),
                                        &ct),
        0);
    assert_string_equal(ct.image_ref, "r");
    ck__cri_container_status_release(&ct);
#undef R
}

/* Decodes the answer with the decoder its fixture is for; 0 or the decoder's code. */
static int decode_as(const char *name, struct ck__pb_reader r)
{
    int e;
    if (strcmp(name, "version_response") == 0) {
        struct ck__cri_version v;
        if ((e = ck__cri_decode_version(r, &v)) == 0)
            ck__cri_version_release(&v);
    } else if (strcmp(name, "status_response") == 0) {
        struct ck__cri_status s;
        if ((e = ck__cri_decode_status(r, &s)) == 0)
            ck__cri_status_release(&s);
    } else if (strcmp(name, "list_images_response") == 0) {
        struct ck__cri_images l;
        if ((e = ck__cri_decode_list_images(r, &l)) == 0)
            ck__cri_images_release(&l);
    } else if (strcmp(name, "image_status_response") == 0) {
        struct ck__cri_image img;
        bool found;
        if ((e = ck__cri_decode_image_status(r, &img, &found)) == 0)
            ck__cri_image_release(&img);
    } else if (strcmp(name, "pull_image_response") == 0) {
        char *ref;
        if ((e = ck__cri_decode_pull_image(r, &ref)) == 0)
            free(ref);
    } else if (strcmp(name, "image_fs_info_response") == 0) {
        struct ck__cri_fs_info f;
        if ((e = ck__cri_decode_fs_info(r, &f)) == 0)
            ck__cri_fs_info_release(&f);
    } else if (strcmp(name, "run_pod_sandbox_response") == 0 ||
               strcmp(name, "exec_response") == 0) {
        char *id;
        if ((e = ck__cri_decode_id(r, &id)) == 0)
            free(id);
    } else if (strcmp(name, "pod_sandbox_status_response") == 0) {
        struct ck__cri_sandbox_status st;
        if ((e = ck__cri_decode_sandbox_status(r, &st)) == 0)
            ck__cri_sandbox_status_release(&st);
    } else if (strcmp(name, "list_pod_sandbox_response") == 0) {
        struct ck__cri_sandboxes l;
        if ((e = ck__cri_decode_list_sandboxes(r, &l)) == 0)
            ck__cri_sandboxes_release(&l);
    } else if (strcmp(name, "list_containers_response") == 0) {
        struct ck__cri_containers l;
        if ((e = ck__cri_decode_list_containers(r, &l)) == 0)
            ck__cri_containers_release(&l);
    } else if (strcmp(name, "container_status_response") == 0) {
        struct ck__cri_container_status st;
        if ((e = ck__cri_decode_container_status(r, &st)) == 0)
            ck__cri_container_status_release(&st);
    } else if (strcmp(name, "exec_sync_response") == 0) {
        struct ck__cri_exec_result x;
        if ((e = ck__cri_decode_exec_sync(r, &x)) == 0)
            ck__cri_exec_result_release(&x);
    } else if (strcmp(name, "container_stats_response") == 0) {
        struct ck__cri_container_stats st;
        if ((e = ck__cri_decode_container_stats(r, &st)) == 0)
            ck__cri_container_stats_release(&st);
    } else if (strcmp(name, "list_container_stats_response") == 0) {
        struct ck__cri_stats_list l;
        if ((e = ck__cri_decode_list_container_stats(r, &l)) == 0)
            ck__cri_stats_list_release(&l);
    } else if (strcmp(name, "pod_sandbox_stats_response") == 0) {
        struct ck__cri_sandbox_stats st;
        if ((e = ck__cri_decode_sandbox_stats(r, &st)) == 0)
            ck__cri_sandbox_stats_release(&st);
    } else {
        assert_string_equal(name, "list_pod_sandbox_stats_response");
        struct ck__cri_sandbox_stats_list l;
        if ((e = ck__cri_decode_list_sandbox_stats(r, &l)) == 0)
            ck__cri_sandbox_stats_list_release(&l);
    }
    return e;
}

static const char *const ANSWERS[] = {"version_response",
                                      "status_response",
                                      "list_images_response",
                                      "image_status_response",
                                      "pull_image_response",
                                      "image_fs_info_response",
                                      "run_pod_sandbox_response",
                                      "exec_response",
                                      "pod_sandbox_status_response",
                                      "list_pod_sandbox_response",
                                      "list_containers_response",
                                      "container_status_response",
                                      "exec_sync_response",
                                      "container_stats_response",
                                      "list_container_stats_response",
                                      "pod_sandbox_stats_response",
                                      "list_pod_sandbox_stats_response"};

/*
 * Every prefix of every answer, each in a buffer of exactly its length (ASan sees a
 * read past it): a cut inside a field is malformed, a cut between top-level fields a
 * shorter answer; never anything else, never a leak.
 */
static void test_truncated_answers(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(ANSWERS) / sizeof(*ANSWERS); i++) {
        struct ck__buf b = fixture(ANSWERS[i]);
        size_t malformed = 0;
        for (size_t n = 0; n < b.len; n++) {
            unsigned char *copy = malloc(n ? n : 1);
            memcpy(copy, b.p, n);
            int e = decode_as(ANSWERS[i], (struct ck__pb_reader){copy, copy + n});
            if (e != 0 && e != CK_EIO)
                fail_msg("%s cut at %zu: %d", ANSWERS[i], n, e);
            malformed += e == CK_EIO;
            free(copy);
        }
        assert_true(malformed > b.len / 2); /* most cuts fall inside a field */
        assert_int_equal(decode_as(ANSWERS[i], reader(&b)), 0);
        ck__buf_release(&b);
    }
}

static void test_malformed_answers(void **state)
{
    (void)state;
    struct ck__cri_version v;
    struct ck__cri_images l;
#define R(s)                                                                                       \
    ((struct ck__pb_reader){(const unsigned char *)(s), (const unsigned char *)(s) + sizeof(s) - 1})
    /* runtime_name "con\0d": a string with a NUL */
    assert_int_equal(ck__cri_decode_version(R("\x12\x05"
                                              "con\0d"),
                                            &v),
                     CK_EIO);
    /* runtime_name as a varint: the wrong wire type */
    assert_int_equal(ck__cri_decode_version(R("\x10\x05"), &v), CK_EIO);
    /* a length past the end */
    assert_int_equal(ck__cri_decode_version(R("\x12\x7f"
                                              "abc"),
                                            &v),
                     CK_EIO);
    /* a malformed tag (field number 0) */
    assert_int_equal(ck__cri_decode_version(R("\x00\x01"), &v), CK_EIO);
    /* an image whose second repo tag is cut: the whole answer is refused, no leak */
    assert_int_equal(ck__cri_decode_list_images(R("\x0a\x07\x12\x01"
                                                  "a\x12\x05"
                                                  "bc"),
                                                &l),
                     CK_EIO);
    /* images as a varint */
    assert_int_equal(ck__cri_decode_list_images(R("\x08\x01"), &l), CK_EIO);
    /* an unknown field of every wire type is skipped */
    assert_int_equal(ck__cri_decode_version(R("\x78\x01\x79\x01\x02\x03\x04\x05\x06\x07\x08"
                                              "\x7a\x01z\x7d\x01\x02\x03\x04\x12\x01x"),
                                            &v),
                     0);
    assert_string_equal(v.runtime_name, "x");
    ck__cri_version_release(&v);
    /* a field given twice: the last one wins */
    assert_int_equal(ck__cri_decode_version(R("\x12\x01"
                                              "a\x12\x02"
                                              "bb"),
                                            &v),
                     0);
    assert_string_equal(v.runtime_name, "bb");
    ck__cri_version_release(&v);
#undef R
}

/* Allocation failure at every step of decoding each answer: a clean CK_ENOMEM, no leak. */
static void test_decode_allocation_failures(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(ANSWERS) / sizeof(*ANSWERS); i++) {
        struct ck__buf b = fixture(ANSWERS[i]);
        int e = CK_ENOMEM;
        unsigned long n;
        for (n = 1; n < 1000 && e == CK_ENOMEM; n++) {
            ck__alloc_fail_at(n, false);
            e = decode_as(ANSWERS[i], reader(&b));
            ck__alloc_fail_at(0, false);
        }
        if (e != 0)
            fail_msg("%s: %d after %lu allocations", ANSWERS[i], e, n);
        assert_true(n > 1); /* some allocation did fail first */
        ck__buf_release(&b);
    }
}

static void test_status_errors(void **state)
{
    (void)state;
    struct ck_err err = {0};
    assert_int_equal(
        ck__cri_status_error("ImageService", "ImageStatus", 5, "image \"x\" not found", &err),
        CK_ENOENT);
    assert_string_equal(err.msg, "cri: ImageService ImageStatus: rpc error: code = NotFound desc "
                                 "= image \"x\" not found");
    assert_int_equal(ck__cri_status_error("RuntimeService", "Version", 3, "bad", &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "code = InvalidArgument desc = bad"));
    assert_int_equal(
        ck__cri_status_error("RuntimeService", "ExecSync", 4, "timeout 1s exceeded", &err),
        CK_ETIMEDOUT);
    assert_non_null(strstr(err.msg, "code = DeadlineExceeded desc = timeout 1s exceeded"));
    assert_int_equal(ck__cri_status_error("RuntimeService", "Status", 12, "", &err), CK_EIO);
    assert_non_null(strstr(err.msg, "code = Unimplemented desc = "));
    assert_int_equal(ck__cri_status_error("ImageService", "PullImage", 16, "who", &err), CK_EIO);
    assert_non_null(strstr(err.msg, "code = Unauthenticated desc = who"));
    /* a code gRPC does not define: Go prints its number */
    assert_int_equal(ck__cri_status_error("ImageService", "PullImage", 17, "?", &err), CK_EIO);
    assert_non_null(strstr(err.msg, "code = Code(17) desc = ?"));
    /* nor does any gRPC send a negative one; still a number, not a table read */
    assert_int_equal(ck__cri_status_error("ImageService", "PullImage", -1, "?", &err), CK_EIO);
    assert_non_null(strstr(err.msg, "code = Code(-1) desc = ?"));
}

static void test_unreachable_runtime(void **state)
{
    (void)state;
    struct ck__cri *c = NULL;
    struct ck_err err = {0};
    assert_int_equal(
        ck__cri_open("unix:///nonexistent-ckube-dir/containerd.sock", NULL, 2000, &c, &err), 0);
    struct ck__cri_version v = {0};
    assert_int_equal(ck__cri_version(c, "0.1.0", &v, &err), CK_EIO);
    assert_null(v.runtime_name);
    assert_non_null(strstr(err.msg, "RuntimeService Version"));
    assert_non_null(strstr(err.msg, "unix:///nonexistent-ckube-dir/containerd.sock"));
    assert_non_null(strstr(err.msg, "No such file or directory"));
    struct ck__cri_images l = {0};
    assert_int_equal(ck__cri_list_images(c, NULL, &l, &err), CK_EIO);
    assert_non_null(strstr(err.msg, "ImageService ListImages"));
    c = ck__cri_close(c);
    assert_null(ck__cri_close(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests_match_protoc),
        cmocka_unit_test(test_sandbox_and_container_requests_match_protoc),
        cmocka_unit_test(test_sandbox_answers),
        cmocka_unit_test(test_container_answers),
        cmocka_unit_test(test_stats_answers),
        cmocka_unit_test(test_incomplete_statuses_refused),
        cmocka_unit_test(test_version_response),
        cmocka_unit_test(test_status_response),
        cmocka_unit_test(test_list_images_response),
        cmocka_unit_test(test_image_status_response),
        cmocka_unit_test(test_pull_and_fs_info_responses),
        cmocka_unit_test(test_truncated_answers),
        cmocka_unit_test(test_malformed_answers),
        cmocka_unit_test(test_decode_allocation_failures),
        cmocka_unit_test(test_status_errors),
        cmocka_unit_test(test_unreachable_runtime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
