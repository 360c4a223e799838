/*
 * test_runtime_cri.c - the CRI runtime's operations (lib/agent/runtime_cri.c, over the CRI
 * client of cri.c and the gRPC client of lib/util/grpc.c) against a fake CRI runtime and
 * image service on a unix socket in a scratch directory: the fake gRPC server of
 * grpc_fake.h with a handler that records every request and answers each method as the
 * test scripted it (a message written here on the protobuf wire layer, a gRPC status,
 * bytes that are no message, a reset, or nothing at all).
 *
 * Each case runs one of the operations the agent's pod sync uses, as the agent does, then
 * reads the requests the fake received field by field (by cri-api's api.proto field
 * numbers) and checks what the operation made of the answers: the Version handshake;
 * RunPodSandbox's configuration (metadata, hostname, log directory, DNS, host ports,
 * labels and annotations, cgroup parent, security context, sysctls, the RuntimeClass's
 * handler) and the adoption of a READY sandbox after a restart; ImageStatus, PullImage
 * with a pull secret's credentials and its failures (ErrImagePull); CreateContainer's
 * configuration, StartContainer and their failures; ContainerStatus as running, exited,
 * OOM-killed or gone; ListContainers for the newest attempt; StopContainer with the grace
 * period; ExecSync, Exec, Attach and PortForward; the stats; the removal of a pod and of
 * orphans; the node's Status; the garbage collection of containers, sandboxes and images;
 * log rotation's ReopenContainerLog. Then failures: allocation failure at each step of a
 * pod's start (ck__alloc_fail_at), gRPC statuses, an answer that is no gRPC
 * message or a truncated one, a reset stream, and a runtime that never answers (the call
 * times out). Real containerd is tests/agent/test_cri_containerd.sh's; the messages'
 * bytes against protoc's are test_cri.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../lib/agent/internal.h"
#include "agent/grpc_fake.h"
#include "agent/scratch.h"
#include "ckube/controllers.h"
#include "ckube/internal/util.h"

#define POD_UID   "5f0c1d2e-0000-4000-8000-000000000001"
#define MAX_CALLS 256
#define MAX_QUEUE 32

/* ---- the fake runtime ------------------------------------------------------------- */

struct pod {
    json_t *obj;
    char dir[128];
    struct ck__rt_pod p;
};

struct call {
    char method[64]; /* "RunPodSandbox": the path's last part */
    unsigned char *msg;
    size_t len;
};

struct scripted {
    char method[64];
    struct grpc_fake_answer a;
};

struct fake {
    pthread_mutex_t lock; /* guards calls and queue: the server's thread and the test's */
    struct call calls[MAX_CALLS];
    size_t n_calls;
    struct scripted queue[MAX_QUEUE]; /* one answer each, in order, per method */
    size_t n_queue;
    struct grpc_fake *srv;
    char dir[64], sock[128], endpoint[160];
    struct ck__runtime *rt;
    char events[16][64]; /* the reasons of the events the runtime emitted */
    size_t n_events;
    struct pod pod; /* fake_pod's, web-0 */
};

/* The handler: records the call; answers with the method's first scripted answer, else an
 * empty message (Version: the fake's name). */
static void fake_handle(void *arg, const char *path, const unsigned char *msg, size_t len,
                        struct grpc_fake_answer *ret)
{
    struct fake *f = arg;
    const char *slash = strrchr(path, '/');
    const char *method = slash ? slash + 1 : path;
    pthread_mutex_lock(&f->lock);
    if (f->n_calls < MAX_CALLS) {
        struct call *c = &f->calls[f->n_calls++];
        snprintf(c->method, sizeof(c->method), "%s", method);
        c->msg = malloc(len + 1);
        if (c->msg)
            memcpy(c->msg, msg, len);
        c->len = len;
    }
    bool scripted = false;
    for (size_t i = 0; i < f->n_queue && !scripted; i++) {
        if (strcmp(f->queue[i].method, method) != 0)
            continue;
        *ret = f->queue[i].a;
        memmove(&f->queue[i], &f->queue[i + 1], (f->n_queue - i - 1) * sizeof(f->queue[0]));
        f->n_queue--;
        scripted = true;
    }
    pthread_mutex_unlock(&f->lock);
    if (!scripted && strcmp(method, "Version") == 0) {
        struct ck__buf b = {0};
        ck__pb_put_bytes(&b, 1, "0.1.0", 5);
        ck__pb_put_bytes(&b, 2, "fakecri", 7);
        ck__pb_put_bytes(&b, 3, "9.9.9", 5);
        ck__pb_put_bytes(&b, 4, "v1", 2);
        ret->body = (unsigned char *)b.p; /* malloc'd by the buffer: the server frees it */
        ret->len = b.len;
    }
}

/* Scripts the next answer of method: kind, status and message, body (copied; may be NULL). */
static void script(struct fake *f, const char *method, enum grpc_fake_kind kind, int status,
                   const char *message, const void *body, size_t len)
{
    struct scripted s = {.a = {.kind = kind, .status = status, .len = len}};
    snprintf(s.method, sizeof(s.method), "%s", method);
    snprintf(s.a.message, sizeof(s.a.message), "%s", message ? message : "");
    if (len) {
        s.a.body = malloc(len);
        assert_non_null(s.a.body);
        memcpy(s.a.body, body, len);
    }
    pthread_mutex_lock(&f->lock);
    bool full = f->n_queue == MAX_QUEUE;
    if (!full)
        f->queue[f->n_queue++] = s;
    pthread_mutex_unlock(&f->lock);
    if (full)
        free(s.a.body);
    assert_false(full);
}

/* The next answer of method is the message in b (released). */
static void answer(struct fake *f, const char *method, struct ck__buf *b)
{
    assert_int_equal(b->err, 0);
    script(f, method, GRPC_FAKE_MESSAGE, 0, NULL, b->p, b->len);
    ck__buf_release(b);
}

/* The next answer of method is a gRPC error status. */
static void answer_status(struct fake *f, const char *method, int status, const char *message)
{
    script(f, method, GRPC_FAKE_STATUS, status, message, NULL, 0);
}

/* How many calls of method the fake received. */
static size_t calls_of(struct fake *f, const char *method)
{
    size_t n = 0;
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->n_calls; i++)
        n += strcmp(f->calls[i].method, method) == 0;
    pthread_mutex_unlock(&f->lock);
    return n;
}

/* The nth (0: first) request of method, as a reader; fails the test when there is none. */
static struct ck__pb_reader request(struct fake *f, const char *method, size_t nth)
{
    struct ck__pb_reader r = {0};
    bool found = false;
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->n_calls && !found; i++)
        if (strcmp(f->calls[i].method, method) == 0 && nth-- == 0) {
            r = (struct ck__pb_reader){f->calls[i].msg, f->calls[i].msg + f->calls[i].len};
            found = true;
        }
    pthread_mutex_unlock(&f->lock);
    if (!found)
        fail_msg("no request %s", method);
    return r;
}

/* The names of the methods called, in order, as "A,B,C". */
static const char *methods(struct fake *f, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = 0;
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->n_calls && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s", i ? "," : "", f->calls[i].method);
    pthread_mutex_unlock(&f->lock);
    return buf;
}

static void forget_calls(struct fake *f)
{
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->n_calls; i++)
        free(f->calls[i].msg);
    f->n_calls = 0;
    pthread_mutex_unlock(&f->lock);
}

/* Drops the answers scripted and not given. */
static void forget_answers(struct fake *f)
{
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->n_queue; i++)
        free(f->queue[i].a.body);
    f->n_queue = 0;
    pthread_mutex_unlock(&f->lock);
}

/* Waits up to 5 s for a call of method (one made on a thread of the runtime's own). */
static void wait_for_call(struct fake *f, const char *method)
{
    for (int i = 0; i < 500 && calls_of(f, method) == 0; i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    assert_int_equal(calls_of(f, method), 1);
}

/* ---- reading a request: fields by a path of numbers ------------------------------- */

/*
 * The field at path in r: numbers separated by dots, each the first occurrence of that
 * field in the message before it, or [n] after a number for its nth (from 0); "2.15.1.3"
 * is config.linux.resources.cpu_shares of a CreateContainerRequest. A length-delimited
 * field's bytes go into *ret_len, a varint's value into *ret_v. false when it is absent.
 */
static bool field_at(struct ck__pb_reader r, const char *path, struct ck__pb_reader *ret_len,
                     uint64_t *ret_v)
{
    const char *p = path;
    for (;;) {
        char *end;
        unsigned long want = strtoul(p, &end, 10);
        unsigned long nth = 0;
        if (*end == '[')
            nth = strtoul(end + 1, &end, 10), end++;
        uint32_t no;
        unsigned wire;
        struct ck__pb_reader sub = {0};
        uint64_t v = 0;
        bool found = false;
        while (!found && ck__pb_next(&r, &no, &wire) > 0) {
            bool ok = wire == CK__PB_LEN      ? ck__pb_get_len(&r, &sub)
                      : wire == CK__PB_VARINT ? ck__pb_get_varint(&r, &v)
                                              : ck__pb_skip(&r, wire);
            assert_true(ok);
            found = no == want && nth-- == 0;
        }
        if (!found)
            return false;
        if (*end != '.') {
            if (ret_len)
                *ret_len = sub;
            if (ret_v)
                *ret_v = v;
            return true;
        }
        r = sub;
        p = end + 1;
    }
}

/* The string at path, "" when absent (a rotating buffer: valid for a few calls). */
static const char *str(struct ck__pb_reader r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static const char *str(struct ck__pb_reader r, const char *fmt, ...)
{
    static char bufs[8][512];
    static int next;
    char path[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    char *buf = bufs[next++ % 8];
    struct ck__pb_reader s;
    buf[0] = 0;
    if (field_at(r, path, &s, NULL))
        snprintf(buf, 512, "%.*s", (int)(s.end - s.p), (const char *)s.p);
    return buf;
}

/* The varint at path, 0 when absent (proto3's default). */
static uint64_t num(struct ck__pb_reader r, const char *path)
{
    uint64_t v = 0;
    return field_at(r, path, NULL, &v) ? v : 0;
}

static bool has(struct ck__pb_reader r, const char *path)
{
    return field_at(r, path, NULL, NULL);
}

/* How many times the last field of path occurs in its message ("2.6": config.envs). */
static size_t count(struct ck__pb_reader r, const char *path)
{
    char buf[128];
    size_t n = 0;
    while (snprintf(buf, sizeof(buf), "%s[%zu]", path, n) > 0 && has(r, buf))
        n++;
    return n;
}

/* The value of key in the map (or KeyValue list) at path, NULL when it has none. */
static const char *map_get(struct ck__pb_reader r, const char *path, const char *key)
{
    for (size_t i = 0;; i++) {
        char entry[128];
        snprintf(entry, sizeof(entry), "%s[%zu]", path, i);
        struct ck__pb_reader e;
        if (!field_at(r, entry, &e, NULL))
            return NULL;
        if (strcmp(str(e, "1"), key) == 0)
            return str(e, "2");
    }
}

/* The nth value of a packed repeated varint field at path. */
static uint64_t packed(struct ck__pb_reader r, const char *path, size_t nth)
{
    struct ck__pb_reader s;
    uint64_t v = 0;
    assert_true(field_at(r, path, &s, NULL));
    for (size_t i = 0; i <= nth; i++)
        assert_true(ck__pb_get_varint(&s, &v));
    return v;
}

/* ---- writing answers -------------------------------------------------------------- */

static void put_str(struct ck__buf *b, uint32_t no, const char *s)
{
    ck__pb_put_bytes(b, no, s, strlen(s));
}

static void put_kv(struct ck__buf *b, uint32_t no, const char *key, const char *value)
{
    size_t m = ck__pb_begin_len(b, no);
    put_str(b, 1, key);
    put_str(b, 2, value);
    ck__pb_end_len(b, m);
}

/* A UInt64Value field. */
static void put_wrapped(struct ck__buf *b, uint32_t no, uint64_t v)
{
    size_t m = ck__pb_begin_len(b, no);
    ck__pb_put_uint(b, 1, v);
    ck__pb_end_len(b, m);
}

/* A PodSandbox of ListPodSandboxResponse (field 1). */
static void put_sandbox(struct ck__buf *b, const char *id, const char *name, const char *uid,
                        uint32_t attempt, int state, int64_t created)
{
    size_t m = ck__pb_begin_len(b, 1);
    put_str(b, 1, id);
    size_t meta = ck__pb_begin_len(b, 2);
    put_str(b, 1, name);
    put_str(b, 2, uid);
    put_str(b, 3, "default");
    ck__pb_put_uint(b, 4, attempt);
    ck__pb_end_len(b, meta);
    ck__pb_put_uint(b, 3, (uint64_t)state);
    ck__pb_put_uint(b, 4, (uint64_t)created);
    put_kv(b, 5, "io.kubernetes.pod.uid", uid);
    ck__pb_end_len(b, m);
}

/* A Container of ListContainersResponse (field 1). */
static void put_container(struct ck__buf *b, const char *id, const char *name, uint32_t attempt,
                          int state)
{
    size_t m = ck__pb_begin_len(b, 1);
    put_str(b, 1, id);
    put_str(b, 2, "sb-1");
    size_t meta = ck__pb_begin_len(b, 3);
    put_str(b, 1, name);
    ck__pb_put_uint(b, 2, attempt);
    ck__pb_end_len(b, meta);
    ck__pb_put_uint(b, 6, (uint64_t)state);
    ck__pb_put_uint(b, 7, (uint64_t)(1600000000LL + attempt) * CK_SEC);
    put_kv(b, 8, "io.kubernetes.pod.uid", POD_UID);
    put_kv(b, 8, "io.kubernetes.container.name", name);
    ck__pb_end_len(b, m);
}

/* An answer of one string field 1 (an id, a URL, an image's reference). */
static void answer_string(struct fake *f, const char *method, const char *s)
{
    struct ck__buf b = {0};
    put_str(&b, 1, s);
    answer(f, method, &b);
}

/* PodSandboxStatusResponse with the sandbox's IP (NULL: no network status, the host's). */
static void answer_sandbox_status(struct fake *f, const char *id, const char *ip)
{
    struct ck__buf b = {0};
    size_t st = ck__pb_begin_len(&b, 1);
    put_str(&b, 1, id);
    size_t meta = ck__pb_begin_len(&b, 2); /* what kubelet's verifySandboxStatus requires */
    put_str(&b, 1, "web-0");
    put_str(&b, 2, POD_UID);
    put_str(&b, 3, "default");
    ck__pb_end_len(&b, meta);
    ck__pb_put_uint(&b, 4, 1700000000LL * CK_SEC);
    if (ip) {
        size_t net = ck__pb_begin_len(&b, 5);
        put_str(&b, 1, ip);
        ck__pb_end_len(&b, net);
    }
    ck__pb_end_len(&b, st);
    answer(f, "PodSandboxStatus", &b);
}

/* ImageStatusResponse: the image with id, or (id NULL) none. */
static void answer_image(struct fake *f, const char *id)
{
    struct ck__buf b = {0};
    if (id) {
        size_t m = ck__pb_begin_len(&b, 1);
        put_str(&b, 1, id);
        put_str(&b, 2, "registry.test/app:v1");
        ck__pb_put_uint(&b, 4, 1234);
        ck__pb_end_len(&b, m);
    }
    answer(f, "ImageStatus", &b);
}

/* ---- the agent's side: a pod, a client for its API objects, events --------------- */

/* The API objects the runtime reads: RuntimeClass "fast", Secret "regcred". */
static int ctl_get(void *data, const struct ck_resource *res, const char *ns, const char *name,
                   json_t **ret_obj, struct ck_err *reterr)
{
    (void)data;
    if (strcmp(res->resource, "runtimeclasses") == 0 && strcmp(name, "fast") == 0) {
        *ret_obj = json_pack("{s:s, s:{s:s}}", "handler", "kata", "metadata", "name", "fast");
        return 0;
    }
    bool second = strcmp(name, "regcred2") == 0;
    if (strcmp(res->resource, "secrets") == 0 && strcmp(ns, "default") == 0 &&
        (strcmp(name, "regcred") == 0 || second)) {
        json_t *cfg =
            json_pack("{s:{s:{s:s, s:s}}}", "auths", "registry.test", "username",
                      second ? "second" : "puller", "password", second ? "pw2" : "s3cret");
        char *text = json_dumps(cfg, JSON_COMPACT);
        char *b64 = ck_base64_encode(text, strlen(text));
        *ret_obj = json_pack("{s:s, s:{s:s}}", "type", "kubernetes.io/dockerconfigjson", "data",
                             ".dockerconfigjson", b64);
        free(b64);
        free(text);
        json_decref(cfg);
        return 0;
    }
    ck_err_set(reterr, CK_ENOENT, "%s \"%s\" not found", res->resource, name);
    reterr->http_status = 404;
    return CK_ENOENT;
}

static const struct ck_ctl_client_ops ctl_ops = {.get = ctl_get};
static const struct ck_ctl_client ctl = {&ctl_ops, NULL};

static void on_event(void *arg, const struct ck__rt_pod *p, const char *type, const char *reason,
                     const char *message)
{
    (void)p, (void)type, (void)message;
    struct fake *f = arg;
    if (f->n_events < sizeof(f->events) / sizeof(f->events[0]))
        snprintf(f->events[f->n_events++], sizeof(f->events[0]), "%s", reason);
}

static bool has_event(struct fake *f, const char *reason)
{
    for (size_t i = 0; i < f->n_events; i++)
        if (strcmp(f->events[i], reason) == 0)
            return true;
    return false;
}

/* The pod the cases run (the pod's own directory under the scratch directory). */
static void pod_init(struct pod *pod, struct fake *f)
{
    json_error_t jerr;
    pod->obj = json_loads(
        "{\"metadata\": {\"name\": \"web-0\", \"namespace\": \"default\", \"uid\": \"" POD_UID
        "\", \"labels\": {\"app\": \"web\"}, \"annotations\": {\"note\": \"hi\"}},"
        " \"spec\": {\"hostname\": \"webhost\", \"runtimeClassName\": \"fast\","
        "  \"imagePullSecrets\": [{\"name\": \"regcred\"}],"
        "  \"securityContext\": {\"runAsUser\": 1000, \"runAsGroup\": 3000,"
        "   \"supplementalGroups\": [2000], \"sysctls\": [{\"name\": \"net.ipv4.ping_group_range\","
        "   \"value\": \"0 1\"}]},"
        "  \"volumes\": [{\"name\": \"data\", \"hostPath\": {\"path\": \"/srv/data\"}}],"
        "  \"containers\": [{\"name\": \"app\", \"image\": \"registry.test/app:v1\","
        "   \"ports\": [{\"containerPort\": 8080, \"hostPort\": 30080},"
        "               {\"containerPort\": 53, \"hostPort\": 30053, \"protocol\": \"UDP\"}],"
        "   \"workingDir\": \"/srv\", \"resources\": {\"requests\": {\"cpu\": \"250m\","
        "   \"memory\": \"64Mi\"}, \"limits\": {\"cpu\": \"500m\", \"memory\": \"128Mi\"}},"
        "   \"securityContext\": {\"runAsUser\": 1001, \"readOnlyRootFilesystem\": true,"
        "    \"capabilities\": {\"add\": [\"NET_ADMIN\"], \"drop\": [\"ALL\"]}},"
        "   \"volumeMounts\": [{\"name\": \"data\", \"mountPath\": \"/data\", \"readOnly\": true}]"
        "  }]}}",
        0, &jerr);
    assert_non_null(pod->obj);
    snprintf(pod->dir, sizeof(pod->dir), "%s/pods/" POD_UID, f->dir);
    pod->p = (struct ck__rt_pod){
        .uid = POD_UID, .ns = "default", .name = "web-0", .dir = pod->dir, .pod = pod->obj};
}

static const json_t *container_spec(const struct pod *pod)
{
    return json_array_get(json_object_get(json_object_get(pod->obj, "spec"), "containers"), 0);
}

/* ---- setup ------------------------------------------------------------------------ */

static int listen_unix(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path))
        return -1;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    scratch_put(path, text, "w");
}

/* The fake serving in a new scratch directory, without a runtime yet. */
static int setup_fake(void **state)
{
    struct fake *f = calloc(1, sizeof(*f));
    if (!f || scratch_make_dir(f->dir, sizeof(f->dir), "runtime-cri") < 0) {
        free(f);
        return -1;
    }
    pthread_mutex_init(&f->lock, NULL);
    snprintf(f->sock, sizeof(f->sock), "%s/cri.sock", f->dir);
    snprintf(f->endpoint, sizeof(f->endpoint), "unix://%s", f->sock);
    int fd = listen_unix(f->sock);
    if (fd < 0 || grpc_fake_start(fd, fake_handle, f, &f->srv) != 0)
        return -1;
    /* the node's files: a CNI configuration, a resolv.conf, a cgroup2 mount table whose
       hierarchy is a plain directory of the scratch directory */
    char path[256], cg[160];
    snprintf(path, sizeof(path), "%s/cni", f->dir);
    mkdir(path, 0755);
    json_t *conf = json_pack("{s:s, s:s, s:[{s:s}]}", "cniVersion", "1.0.0", "name", "test",
                             "plugins", "type", "bridge");
    char *text = json_dumps(conf, JSON_INDENT(2));
    write_file(path, "10-test.conflist", text);
    free(text);
    json_decref(conf);
    write_file(f->dir, "resolv.conf", "nameserver 192.0.2.53\nsearch example.test\n");
    snprintf(cg, sizeof(cg), "%s/cgroup", f->dir);
    mkdir(cg, 0755);
    snprintf(path, sizeof(path), "cgroup2 %s cgroup2 rw 0 0\n", cg);
    write_file(f->dir, "mounts", path);
    *state = f;
    return 0;
}

/*
 * f->rt: a runtime on the fake with the CNI configuration directory conf and plugin
 * directory bin (NULL: the setup's cni/, holding an add-on's file) and --pod-cidr
 * pod_cidr (may be NULL).
 */
static int make_runtime(struct fake *f, const char *conf, const char *bin, const char *pod_cidr)
{
    static char mounts[256], cni[256], resolv[256];
    snprintf(mounts, sizeof(mounts), "%s/mounts", f->dir);
    snprintf(cni, sizeof(cni), "%s/cni", f->dir);
    snprintf(resolv, sizeof(resolv), "%s/resolv.conf", f->dir);
    ck__cri_cgroup_mounts = mounts;
    static const char *const dns[] = {"10.96.0.10"};
    struct ck_agent_config config = {.runtime_endpoint = f->endpoint,
                                     .cni_conf_dir = conf ? conf : cni,
                                     .cni_bin_dir = bin ? bin : cni,
                                     .pod_cidr = pod_cidr,
                                     .cgroup_root = "/ckube-test",
                                     .cluster_dns = dns,
                                     .n_cluster_dns = 1,
                                     .cluster_domain = "cluster.local",
                                     .resolv_conf = resolv};
    struct ck_err err = {0};
    if (ck__runtime_cri_new(&config, &ctl, on_event, f, &f->rt, &err) < 0) {
        fprintf(stderr, "runtime: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int setup(void **state)
{
    if (setup_fake(state) < 0)
        return -1;
    return make_runtime(*state, NULL, NULL, NULL);
}

static int teardown(void **state)
{
    struct fake *f = *state;
    json_decref(f->pod.obj);
    if (f->rt)
        f->rt->ops->free(f->rt);
    grpc_fake_stop(f->srv);
    forget_calls(f);
    forget_answers(f);
    pthread_mutex_destroy(&f->lock);
    scratch_remove_dir(f->dir);
    free(f);
    ck__cri_cgroup_mounts = NULL;
    return 0;
}

/* ---- the cases -------------------------------------------------------------------- */

static void test_version_handshake(void **state)
{
    struct fake *f = *state;
    char buf[128];
    /* the runtime asked for the CRI version it speaks, once, when made */
    assert_string_equal(methods(f, buf, sizeof(buf)), "Version");
    assert_string_equal(str(request(f, "Version", 0), "1"), "v1");
    f->rt->ops->version(f->rt, buf, sizeof(buf));
    assert_string_equal(buf, "fakecri://9.9.9");
}

static void test_node_status_from_status_and_images(void **state)
{
    struct fake *f = *state;
    struct ck__buf b = {0};
    size_t st = ck__pb_begin_len(&b, 1), c = ck__pb_begin_len(&b, 1);
    put_str(&b, 1, "RuntimeReady");
    ck__pb_put_uint(&b, 2, 1);
    ck__pb_end_len(&b, c);
    c = ck__pb_begin_len(&b, 1);
    put_str(&b, 1, "NetworkReady");
    put_str(&b, 3, "NetworkPluginNotReady");
    put_str(&b, 4, "cni plugin not initialized");
    ck__pb_end_len(&b, c);
    ck__pb_end_len(&b, st);
    answer(f, "Status", &b);
    size_t img = ck__pb_begin_len(&b, 1);
    put_str(&b, 1, "sha256:aa");
    put_str(&b, 2, "registry.test/app:v1");
    put_str(&b, 3, "registry.test/app@sha256:aa");
    ck__pb_put_uint(&b, 4, 4096);
    ck__pb_end_len(&b, img);
    answer(f, "ListImages", &b);
    struct ck__rt_node_status ns;
    f->rt->ops->node_status(f->rt, &ns);
    assert_false(ns.ready);
    assert_string_equal(ns.message, "container runtime network not ready: NetworkReady=false "
                                    "reason:NetworkPluginNotReady message:cni plugin not "
                                    "initialized");
    assert_int_equal(json_array_size(ns.images), 1);
    json_t *names = json_object_get(json_array_get(ns.images, 0), "names");
    assert_string_equal(json_string_value(json_array_get(names, 0)), "registry.test/app@sha256:aa");
    assert_string_equal(json_string_value(json_array_get(names, 1)), "registry.test/app:v1");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(ns.images, 0), "sizeBytes")),
                     4096);
    json_decref(ns.images);
    assert_false(num(request(f, "Status", 0), "1")); /* not verbose */
    /* Status failing: what the last one said stands */
    answer_status(f, "Status", 14, "connection refused");
    f->rt->ops->node_status(f->rt, &ns);
    assert_false(ns.ready);
    assert_non_null(strstr(ns.message, "NetworkPluginNotReady"));
    json_decref(ns.images);
}

/* Runs pod_start with a new sandbox "sb-1" at 10.244.0.7; asserts it worked. */
static void start_pod(struct fake *f, struct pod *pod)
{
    char reason[64];
    struct ck_err err = {0};
    answer_string(f, "RunPodSandbox", "sb-1");
    answer_sandbox_status(f, "sb-1", "10.244.0.7");
    int r = f->rt->ops->pod_start(f->rt, &pod->p, reason, sizeof(reason), &err);
    if (r < 0)
        fail_msg("pod_start: %s", err.msg);
    assert_string_equal(pod->p.sandbox_id, "sb-1");
    assert_string_equal(pod->p.ip, "10.244.0.7");
}

/* The pod web-0 (pod_init) as f->pod, which teardown frees. */
static struct pod *fake_pod(struct fake *f)
{
    pod_init(&f->pod, f);
    return &f->pod;
}

/* fake_pod, with its sandbox started (start_pod). */
static struct pod *started_pod(struct fake *f)
{
    struct pod *pod = fake_pod(f);
    start_pod(f, pod);
    return pod;
}

static void test_run_pod_sandbox_config(void **state)
{
    struct fake *f = *state;
    struct pod *pod = fake_pod(f);
    char buf[256], path[256];
    forget_calls(f);
    start_pod(f, pod);
    assert_string_equal(methods(f, buf, sizeof(buf)),
                        "ListPodSandbox,RunPodSandbox,PodSandboxStatus");
    /* the pod's sandboxes, found by its uid label, in any state */
    struct ck__pb_reader list = request(f, "ListPodSandbox", 0);
    assert_string_equal(map_get(list, "1.3", "io.kubernetes.pod.uid"), POD_UID);
    assert_false(has(list, "1.2"));
    struct ck__pb_reader run = request(f, "RunPodSandbox", 0);
    /* metadata */
    assert_string_equal(str(run, "1.1.1"), "web-0");
    assert_string_equal(str(run, "1.1.2"), POD_UID);
    assert_string_equal(str(run, "1.1.3"), "default");
    assert_int_equal(num(run, "1.1.4"), 0);
    assert_string_equal(str(run, "1.2"), "webhost");
    snprintf(path, sizeof(path), "%s/containers", pod->dir);
    assert_string_equal(str(run, "1.3"), path);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0); /* made for the runtime */
    /* DNS: the cluster's server, its searches before the host's, ndots */
    assert_int_equal(count(run, "1.4.1"), 1);
    assert_string_equal(str(run, "1.4.1"), "10.96.0.10");
    assert_string_equal(str(run, "1.4.2[0]"), "default.svc.cluster.local");
    assert_string_equal(str(run, "1.4.2[1]"), "svc.cluster.local");
    assert_string_equal(str(run, "1.4.2[2]"), "cluster.local");
    assert_string_equal(str(run, "1.4.2[3]"), "example.test");
    assert_string_equal(str(run, "1.4.3"), "ndots:5");
    /* host ports: TCP (0, left out) and UDP */
    assert_int_equal(count(run, "1.5"), 2);
    assert_int_equal(num(run, "1.5[0].1"), 0);
    assert_int_equal(num(run, "1.5[0].2"), 8080);
    assert_int_equal(num(run, "1.5[0].3"), 30080);
    assert_int_equal(num(run, "1.5[1].1"), 1);
    assert_int_equal(num(run, "1.5[1].2"), 53);
    assert_int_equal(num(run, "1.5[1].3"), 30053);
    /* the kubelet's labels and the pod's own; its annotations */
    assert_string_equal(map_get(run, "1.6", "io.kubernetes.pod.name"), "web-0");
    assert_string_equal(map_get(run, "1.6", "io.kubernetes.pod.namespace"), "default");
    assert_string_equal(map_get(run, "1.6", "io.kubernetes.pod.uid"), POD_UID);
    assert_string_equal(map_get(run, "1.6", "app"), "web");
    assert_string_equal(map_get(run, "1.7", "note"), "hi");
    /* linux: the Burstable pod's cgroup under the cgroup root, made first with its limits */
    assert_string_equal(str(run, "1.8.1"), "/ckube-test/kubepods/burstable/pod" POD_UID);
    snprintf(path, sizeof(path), "%s/cgroup/ckube-test/kubepods/burstable/pod" POD_UID "/cpu.max",
             f->dir);
    assert_int_equal(stat(path, &sb), 0);
    /* the security context: pod namespaces (POD = 0 for network and ipc, CONTAINER = 1 for
       pid), run as user and group, supplemental groups; sysctls */
    assert_int_equal(num(run, "1.8.2.1.1"), 0);
    assert_int_equal(num(run, "1.8.2.1.2"), 1);
    assert_int_equal(num(run, "1.8.2.1.3"), 0);
    assert_int_equal(num(run, "1.8.2.3.1"), 1000);
    assert_int_equal(num(run, "1.8.2.8.1"), 3000);
    assert_int_equal(packed(run, "1.8.2.5", 0), 2000);
    assert_string_equal(map_get(run, "1.8.3", "net.ipv4.ping_group_range"), "0 1");
    /* the RuntimeClass's handler */
    assert_string_equal(str(run, "2"), "kata");
    /* the sandbox's status for its IP */
    assert_string_equal(str(request(f, "PodSandboxStatus", 0), "1"), "sb-1");
}

static void test_sandbox_adopted_after_restart(void **state)
{
    struct fake *f = *state;
    struct pod *pod = fake_pod(f);
    char reason[64], buf[256];
    struct ck_err err = {0};
    forget_calls(f);
    /* an agent restarted: the runtime has the pod's old NOTREADY sandbox and a READY one */
    struct ck__buf b = {0};
    put_sandbox(&b, "sb-old", "web-0", POD_UID, 0, CK__CRI_SANDBOX_NOTREADY, 100);
    put_sandbox(&b, "sb-live", "web-0", POD_UID, 1, CK__CRI_SANDBOX_READY, 200);
    answer(f, "ListPodSandbox", &b);
    answer_sandbox_status(f, "sb-live", "10.244.0.9");
    assert_int_equal(f->rt->ops->pod_start(f->rt, &pod->p, reason, sizeof(reason), &err), 0);
    assert_string_equal(methods(f, buf, sizeof(buf)), "ListPodSandbox,PodSandboxStatus");
    assert_string_equal(pod->p.sandbox_id, "sb-live");
    assert_string_equal(pod->p.ip, "10.244.0.9");
    /* only a NOTREADY one: a new sandbox, its attempt after the old one's */
    forget_calls(f);
    put_sandbox(&b, "sb-old", "web-0", POD_UID, 1, CK__CRI_SANDBOX_NOTREADY, 100);
    answer(f, "ListPodSandbox", &b);
    start_pod(f, pod);
    assert_int_equal(num(request(f, "RunPodSandbox", 0), "1.1.4"), 2);
    /* a sandbox gone between the list and its status: pod_start fails, the id is forgotten */
    forget_calls(f);
    put_sandbox(&b, "sb-gone", "web-0", POD_UID, 0, CK__CRI_SANDBOX_READY, 300);
    answer(f, "ListPodSandbox", &b);
    answer_status(f, "PodSandboxStatus", 5, "sandbox sb-gone not found");
    assert_int_equal(f->rt->ops->pod_start(f->rt, &pod->p, reason, sizeof(reason), &err),
                     CK_ENOENT);
    assert_string_equal(pod->p.sandbox_id, "");
    assert_non_null(strstr(err.msg, "code = NotFound desc = sandbox sb-gone not found"));
}

static void test_host_network_sandbox(void **state)
{
    struct fake *f = *state;
    struct pod *pod = fake_pod(f);
    char reason[64];
    struct ck_err err = {0};
    json_t *spec = json_object_get(pod->obj, "spec");
    json_object_set_new(spec, "hostNetwork", json_true());
    json_object_set_new(spec, "hostPID", json_true());
    json_object_del(spec, "runtimeClassName");
    answer_string(f, "RunPodSandbox", "sb-host");
    answer_sandbox_status(f, "sb-host", NULL); /* the node's IP, which the agent gives */
    int r = f->rt->ops->pod_start(f->rt, &pod->p, reason, sizeof(reason), &err);
    if (r < 0)
        fail_msg("pod_start: %s", err.msg);
    assert_string_equal(pod->p.sandbox_id, "sb-host");
    assert_string_equal(pod->p.ip, "");
    struct ck__pb_reader run = request(f, "RunPodSandbox", 0);
    assert_false(has(run, "1.2")); /* the host's name */
    assert_int_equal(num(run, "1.8.2.1.1"), CK__CRI_NS_NODE);
    assert_int_equal(num(run, "1.8.2.1.2"), CK__CRI_NS_NODE);
    assert_int_equal(num(run, "1.8.2.1.3"), CK__CRI_NS_POD);
    /* ClusterFirst on the host network: the host's resolver */
    assert_int_equal(count(run, "1.4.1"), 1);
    assert_string_equal(str(run, "1.4.1"), "192.0.2.53");
    assert_string_equal(str(run, "1.4.2"), "example.test");
    assert_false(has(run, "2"));
}

/* The range of the runtime's own CNI file in dir/net.d ("" when there is none). */
static const char *own_range(struct fake *f, char *buf, size_t size)
{
    char conf[160];
    snprintf(conf, sizeof(conf), "%s/net.d", f->dir);
    if (!ck__cni_own_range(conf, buf, size))
        buf[0] = 0;
    return buf;
}

/* ListPodSandbox answers one READY sandbox; its status has ip (NULL: the host network). */
static void answer_ready_sandbox(struct fake *f, const char *id, const char *ip)
{
    struct ck__buf b = {0};
    put_sandbox(&b, id, "web-0", POD_UID, 0, CK__CRI_SANDBOX_READY, 100);
    answer(f, "ListPodSandbox", &b);
    answer_sandbox_status(f, id, ip);
}

/*
 * The pod range is the one the agent gives (the Node's), never --pod-cidr on its own,
 * and it never changes under sandboxes in the pod network: with no CNI configuration
 * but its own to write, no sandbox is made before set_pod_cidr; a late range is written
 * and pods start on it; another range is refused while a sandbox holds addresses of the
 * first, taken once none does; after a restart an earlier start's file is no network
 * until a range is given, and one that differs from the file's while its sandboxes run
 * is refused and the file's kept.
 */
static void test_pod_range_given_by_the_agent(void **state)
{
    struct fake *f = *state;
    char conf[160], bin[160], path[256], range[64], reason[64], buf[256];
    struct ck_err err = {0};
    snprintf(conf, sizeof(conf), "%s/net.d", f->dir);
    snprintf(bin, sizeof(bin), "%s/bin", f->dir);
    assert_int_equal(mkdir(bin, 0755), 0);
    const char *plugins[] = {"bridge", "host-local", "portmap", "loopback"};
    for (size_t i = 0; i < 4; i++) {
        write_file(bin, plugins[i], "#!/bin/sh\n");
        snprintf(path, sizeof(path), "%s/%s", bin, plugins[i]);
        assert_int_equal(chmod(path, 0755), 0);
    }
    /* started with a --pod-cidr other than what the Node will get */
    assert_int_equal(make_runtime(f, conf, bin, "10.99.0.0/24"), 0);
    struct pod *pod = fake_pod(f);
    forget_calls(f);
    assert_int_equal(f->rt->ops->pod_start(f->rt, &pod->p, reason, sizeof(reason), &err), CK_EIO);
    assert_non_null(strstr(err.msg, "no CNI configuration"));
    assert_string_equal(methods(f, buf, sizeof(buf)), ""); /* no sandbox looked for */
    assert_string_equal(own_range(f, range, sizeof(range)), "");

    /* the Node's range arrives after registration: written, and the pod starts on it */
    assert_int_equal(f->rt->ops->set_pod_cidr(f->rt, "10.244.0.0/24", &err), 0);
    assert_string_equal(methods(f, buf, sizeof(buf)), ""); /* no range held: nothing to ask */
    assert_string_equal(own_range(f, range, sizeof(range)), "10.244.0.0/24");
    start_pod(f, pod);
    forget_calls(f);
    assert_int_equal(f->rt->ops->set_pod_cidr(f->rt, "10.244.0.0/24", &err), 0);
    assert_string_equal(methods(f, buf, sizeof(buf)), ""); /* the same: nothing to ask */
    assert_int_equal(f->rt->ops->set_pod_cidr(f->rt, "10.244.0.1/24", &err), CK_EINVAL);

    /* another range while the pod's sandbox holds an address of the first: refused */
    answer_ready_sandbox(f, "sb-1", "10.244.0.7");
    assert_int_equal(f->rt->ops->set_pod_cidr(f->rt, "10.244.7.0/24", &err), CK_EPERM);
    assert_non_null(strstr(err.msg, "not changing the pod CIDR from 10.244.0.0/24 to "
                                    "10.244.7.0/24: 1 pod sandboxes have addresses"));
    assert_true(has(request(f, "ListPodSandbox", 0), "1.2")); /* the READY ones */
    assert_int_equal(num(request(f, "ListPodSandbox", 0), "1.2.1"), CK__CRI_SANDBOX_READY);
    assert_string_equal(own_range(f, range, sizeof(range)), "10.244.0.0/24");
    /* a host network sandbox holds none: the range is taken, the file written again */
    answer_ready_sandbox(f, "sb-host", NULL);
    assert_int_equal(f->rt->ops->set_pod_cidr(f->rt, "10.244.7.0/24", &err), 0);
    assert_string_equal(own_range(f, range, sizeof(range)), "10.244.7.0/24");

    /* a restart: the file of the earlier start is no network before a range is given */
    f->rt->ops->free(f->rt);
    f->rt = NULL;
    assert_int_equal(make_runtime(f, conf, bin, NULL), 0);
    forget_calls(f);
    assert_int_equal(f->rt->ops->pod_start(f->rt, &pod->p, reason, sizeof(reason), &err), CK_EIO);
    assert_non_null(strstr(err.msg, "no pod CIDR for the node yet"));
    assert_int_equal(calls_of(f, "RunPodSandbox"), 0);
    /* the Node's range differs from the file's while its sandbox runs: the file's kept */
    answer_ready_sandbox(f, "sb-1", "10.244.7.3");
    assert_int_equal(f->rt->ops->set_pod_cidr(f->rt, "10.244.9.0/24", &err), CK_EPERM);
    assert_non_null(strstr(err.msg, "from 10.244.7.0/24 to 10.244.9.0/24"));
    assert_string_equal(own_range(f, range, sizeof(range)), "10.244.7.0/24");
    start_pod(f, pod); /* on the kept range */
    /* once the pod is gone the Node's is taken */
    assert_int_equal(f->rt->ops->set_pod_cidr(f->rt, "10.244.9.0/24", &err), 0);
    assert_string_equal(own_range(f, range, sizeof(range)), "10.244.9.0/24");
}

static void test_no_sandbox_made_when_the_list_fails(void **state)
{
    struct fake *f = *state;
    struct pod *pod = fake_pod(f);
    char reason[64], buf[256];
    struct ck_err err = {0};
    /* the pod's sandboxes unknown (its READY one may be there): none is made, as the
       kubelet's SyncPod does nothing without the pod's status */
    forget_calls(f);
    answer_status(f, "ListPodSandbox", 14, "connection refused");
    assert_int_equal(f->rt->ops->pod_start(f->rt, &pod->p, reason, sizeof(reason), &err), CK_EIO);
    assert_string_equal(err.msg, "cri: RuntimeService ListPodSandbox: rpc error: code = "
                                 "Unavailable desc = connection refused");
    answer_status(f, "ListPodSandbox", 5, "no such thing");
    assert_int_equal(f->rt->ops->pod_start(f->rt, &pod->p, reason, sizeof(reason), &err), CK_EIO);
    assert_int_equal(err.code, CK_EIO);
    script(f, "ListPodSandbox", GRPC_FAKE_MESSAGE, 0, NULL, "\x0a\x05\x0a\x01", 4);
    assert_int_equal(f->rt->ops->pod_start(f->rt, &pod->p, reason, sizeof(reason), &err), CK_EIO);
    assert_string_equal(err.msg, "cri: RuntimeService ListPodSandbox: malformed answer");
    assert_string_equal(methods(f, buf, sizeof(buf)),
                        "ListPodSandbox,ListPodSandbox,ListPodSandbox");
    assert_string_equal(pod->p.sandbox_id, "");
    /* the list answers again: the sandbox is made */
    start_pod(f, pod);
}

static void test_run_pod_sandbox_failures(void **state)
{
    struct fake *f = *state;
    struct pod *pod = fake_pod(f);
    char reason[64];
    struct ck_err err = {0};
    static const struct {
        int status;
        const char *words;
    } cases[] = {{2, "code = Unknown desc = failed to setup network"},
                 {14, "code = Unavailable desc = failed to setup network"},
                 {4, "code = DeadlineExceeded desc = failed to setup network"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        answer_status(f, "RunPodSandbox", cases[i].status, "failed to setup network");
        int r = f->rt->ops->pod_start(f->rt, &pod->p, reason, sizeof(reason), &err);
        assert_true(r < 0);
        assert_non_null(strstr(err.msg, "cri: RuntimeService RunPodSandbox: rpc error: "));
        assert_non_null(strstr(err.msg, cases[i].words));
        assert_string_equal(pod->p.sandbox_id, "");
    }
    /* a RuntimeClass that cannot be read: no sandbox, the API's words */
    json_object_set_new(json_object_get(pod->obj, "spec"), "runtimeClassName",
                        json_string("missing"));
    size_t before = calls_of(f, "RunPodSandbox");
    assert_true(f->rt->ops->pod_start(f->rt, &pod->p, reason, sizeof(reason), &err) < 0);
    assert_string_equal(err.msg, "runtimeclasses \"missing\" not found");
    assert_int_equal(calls_of(f, "RunPodSandbox"), before);
    /* no class: the runtime's default handler (none sent) */
    json_object_del(json_object_get(pod->obj, "spec"), "runtimeClassName");
    start_pod(f, pod);
    assert_false(has(request(f, "RunPodSandbox", before), "2"));
}

/* The container's start: command, args and env as the agent expanded them. */
static int start_container(struct fake *f, struct pod *pod, bool backoff, char *id, char *reason,
                           struct ck_err *err)
{
    static char *const command[] = {"/bin/app", NULL};
    static char *const args[] = {"--port", "8080", NULL};
    static char *const envp[] = {"MODE=prod", "EMPTY=", NULL};
    struct ck__rt_start s = {.name = "app",
                             .attempt = 0,
                             .spec = container_spec(pod),
                             .command = command,
                             .args = args,
                             .envp = envp,
                             .pull_backoff = backoff};
    return f->rt->ops->start(f->rt, &pod->p, &s, id, 192, reason, 64, err);
}

static void test_create_container_config(void **state)
{
    struct fake *f = *state;
    struct pod *pod = started_pod(f);
    char id[192], reason[64], buf[256], path[256];
    struct ck_err err = {0};
    forget_calls(f);
    answer_image(f, "sha256:present");
    answer_string(f, "CreateContainer", "ct-1");
    int r = start_container(f, pod, false, id, reason, &err);
    if (r < 0)
        fail_msg("start: %s", err.msg);
    assert_string_equal(id, "fakecri://ct-1");
    /* the image was there (IfNotPresent for a tag): no pull */
    assert_string_equal(methods(f, buf, sizeof(buf)), "ImageStatus,CreateContainer,StartContainer");
    assert_string_equal(str(request(f, "ImageStatus", 0), "1.1"), "registry.test/app:v1");
    assert_true(has_event(f, "Pulled"));
    struct ck__pb_reader c = request(f, "CreateContainer", 0);
    assert_string_equal(str(c, "1"), "sb-1");
    assert_string_equal(str(c, "2.1.1"), "app");
    assert_int_equal(num(c, "2.1.2"), 0);
    assert_string_equal(str(c, "2.2.1"), "sha256:present"); /* the image's id */
    assert_int_equal(count(c, "2.3"), 1);
    assert_string_equal(str(c, "2.3"), "/bin/app");
    assert_int_equal(count(c, "2.4"), 2);
    assert_string_equal(str(c, "2.4[0]"), "--port");
    assert_string_equal(str(c, "2.4[1]"), "8080");
    assert_string_equal(str(c, "2.5"), "/srv");
    assert_int_equal(count(c, "2.6"), 2);
    assert_string_equal(map_get(c, "2.6", "MODE"), "prod");
    assert_string_equal(map_get(c, "2.6", "EMPTY"), "");
    /* mounts: the hostPath read-only, then the attempt's termination message file */
    assert_int_equal(count(c, "2.7"), 2);
    assert_string_equal(str(c, "2.7[0].1"), "/data");
    assert_string_equal(str(c, "2.7[0].2"), "/srv/data");
    assert_int_equal(num(c, "2.7[0].3"), 1);
    assert_string_equal(str(c, "2.7[1].1"), "/dev/termination-log");
    snprintf(path, sizeof(path), "%s/containers/app/0/termination-log", pod->dir);
    assert_string_equal(str(c, "2.7[1].2"), path);
    assert_int_equal(access(path, F_OK), 0);
    assert_string_equal(map_get(c, "2.9", "io.kubernetes.container.name"), "app");
    assert_string_equal(map_get(c, "2.9", "io.kubernetes.pod.uid"), POD_UID);
    assert_string_equal(map_get(c, "2.10", "io.kubernetes.container.restartCount"), "0");
    assert_string_equal(str(c, "2.11"), "app/0.log"); /* under the sandbox's log directory */
    /* resources: shares from 250m, quota from 500m, the memory limit, Burstable's score */
    assert_int_equal(num(c, "2.15.1.1"), 100000);
    assert_int_equal(num(c, "2.15.1.2"), 50000);
    assert_int_equal(num(c, "2.15.1.3"), 256);
    assert_int_equal(num(c, "2.15.1.4"), 128 << 20);
    assert_int_equal(num(c, "2.15.1.5"), 999);
    /* the security context: the container's user over the pod's, the pod's group */
    assert_string_equal(str(c, "2.15.2.1.1"), "NET_ADMIN");
    assert_string_equal(str(c, "2.15.2.1.2"), "ALL");
    assert_false(num(c, "2.15.2.2"));
    assert_int_equal(num(c, "2.15.2.5.1"), 1001);
    assert_int_equal(num(c, "2.15.2.12.1"), 3000);
    assert_int_equal(num(c, "2.15.2.7"), 1);
    assert_int_equal(packed(c, "2.15.2.8", 0), 2000);
    assert_true(count(c, "2.15.2.13") > 0); /* masked paths: not privileged */
    assert_string_equal(str(c, "2.15.2.13"), "/proc/asound");
    assert_int_equal(num(c, "2.15.2.15.1"), CK__CRI_SECCOMP_UNCONFINED);
    /* the sandbox's configuration again, as CRI asks */
    assert_string_equal(str(c, "3.1.2"), POD_UID);
    assert_string_equal(str(request(f, "StartContainer", 0), "1"), "ct-1");
}

static void test_pull_with_secret_and_its_failures(void **state)
{
    struct fake *f = *state;
    struct pod *pod = started_pod(f);
    char id[192], reason[64], buf[256];
    struct ck_err err = {0};
    /* absent: pulled with the pull secret's credentials for registry.test */
    forget_calls(f);
    answer_image(f, NULL);
    answer_string(f, "PullImage", "sha256:pulled");
    answer_string(f, "CreateContainer", "ct-2");
    assert_int_equal(start_container(f, pod, false, id, reason, &err), 0);
    assert_string_equal(methods(f, buf, sizeof(buf)),
                        "ImageStatus,PullImage,CreateContainer,StartContainer");
    struct ck__pb_reader pull = request(f, "PullImage", 0);
    assert_string_equal(str(pull, "1.1"), "registry.test/app:v1");
    assert_string_equal(str(pull, "2.1"), "puller");
    assert_string_equal(str(pull, "2.2"), "s3cret");
    assert_string_equal(str(request(f, "CreateContainer", 0), "2.2.1"), "sha256:pulled");
    assert_true(has_event(f, "Pulling"));
    /* the registry's refusal, the runtime unavailable: ErrImagePull with the runtime's words */
    static const struct {
        int status;
        const char *words;
    } cases[] = {{5, "code = NotFound desc = registry.test/app:v1: not found"},
                 {14, "code = Unavailable desc = registry.test/app:v1: not found"},
                 {2, "code = Unknown desc = registry.test/app:v1: not found"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        forget_calls(f);
        f->n_events = 0;
        answer_image(f, NULL);
        answer_status(f, "PullImage", cases[i].status, "registry.test/app:v1: not found");
        assert_int_equal(start_container(f, pod, false, id, reason, &err), CK_EIO);
        assert_string_equal(reason, "ErrImagePull");
        assert_non_null(strstr(err.msg, cases[i].words));
        assert_true(has_event(f, "Failed"));
        assert_string_equal(methods(f, buf, sizeof(buf)), "ImageStatus,PullImage");
    }
    /* in back-off: no pull */
    forget_calls(f);
    answer_image(f, NULL);
    assert_int_equal(start_container(f, pod, true, id, reason, &err), CK_EIO);
    assert_string_equal(reason, "ImagePullBackOff");
    assert_string_equal(methods(f, buf, sizeof(buf)), "ImageStatus");
    /* ImageStatus failing: ErrImageInspect */
    answer_status(f, "ImageStatus", 14, "connection refused");
    assert_int_equal(start_container(f, pod, false, id, reason, &err), CK_EIO);
    assert_string_equal(reason, "ErrImageInspect");
    assert_non_null(strstr(err.msg, "ImageService ImageStatus: rpc error: code = Unavailable"));
}

static void test_pull_tries_each_credential(void **state)
{
    struct fake *f = *state;
    struct pod *pod = fake_pod(f);
    char id[192], reason[64];
    struct ck_err err = {0};
    json_t *secrets = json_pack("[{s:s}, {s:s}, {s:s}]", "name", "regcred", "name", "missing",
                                "name", "regcred2");
    json_object_set_new(json_object_get(pod->obj, "spec"), "imagePullSecrets", secrets);
    start_pod(f, pod);
    /* the first refused, the second works */
    forget_calls(f);
    answer_image(f, NULL);
    answer_status(f, "PullImage", 2, "401 Unauthorized");
    answer_string(f, "PullImage", "sha256:pulled");
    answer_string(f, "CreateContainer", "ct-1");
    assert_int_equal(start_container(f, pod, false, id, reason, &err), 0);
    assert_int_equal(calls_of(f, "PullImage"), 2);
    const char *first = str(request(f, "PullImage", 0), "2.1");
    const char *then = str(request(f, "PullImage", 1), "2.1");
    assert_true((strcmp(first, "puller") == 0 && strcmp(then, "second") == 0) ||
                (strcmp(first, "second") == 0 && strcmp(then, "puller") == 0));
    assert_true(has_event(f, "FailedToRetrieveImagePullSecret")); /* "missing" */
    /* both refused: the errors of both, each once */
    forget_calls(f);
    answer_image(f, NULL);
    answer_status(f, "PullImage", 2, "401 Unauthorized");
    answer_status(f, "PullImage", 2, "403 Forbidden");
    assert_int_equal(start_container(f, pod, false, id, reason, &err), CK_EIO);
    assert_string_equal(reason, "ErrImagePull");
    assert_string_equal(err.msg, "[cri: ImageService PullImage: rpc error: code = Unknown desc = "
                                 "401 Unauthorized, cri: ImageService PullImage: rpc error: code "
                                 "= Unknown desc = 403 Forbidden]");
    forget_calls(f);
    answer_image(f, NULL);
    answer_status(f, "PullImage", 2, "401 Unauthorized");
    answer_status(f, "PullImage", 2, "401 Unauthorized");
    assert_int_equal(start_container(f, pod, false, id, reason, &err), CK_EIO);
    assert_string_equal(err.msg,
                        "cri: ImageService PullImage: rpc error: code = Unknown desc = 401 "
                        "Unauthorized");
}

static void test_create_and_start_failures(void **state)
{
    struct fake *f = *state;
    struct pod *pod = started_pod(f);
    char id[192], reason[64], buf[256];
    struct ck_err err = {0};
    forget_calls(f);
    answer_image(f, "sha256:present");
    answer_status(f, "CreateContainer", 2, "failed to create containerd container");
    assert_true(start_container(f, pod, false, id, reason, &err) < 0);
    assert_string_equal(reason, "CreateContainerError");
    assert_non_null(strstr(err.msg, "failed to create containerd container"));
    /* StartContainer failing: the created container is removed */
    forget_calls(f);
    answer_image(f, "sha256:present");
    answer_string(f, "CreateContainer", "ct-3");
    answer_status(f, "StartContainer", 2, "exec: \"/bin/app\": not found");
    assert_true(start_container(f, pod, false, id, reason, &err) < 0);
    assert_string_equal(reason, "RunContainerError");
    assert_string_equal(methods(f, buf, sizeof(buf)),
                        "ImageStatus,CreateContainer,StartContainer,RemoveContainer");
    assert_string_equal(str(request(f, "RemoveContainer", 0), "1"), "ct-3");
}

/* ContainerStatusResponse: state, times, exit code and reason. */
static void answer_container_status(struct fake *f, int state, int64_t started, int64_t finished,
                                    int exit_code, const char *reason)
{
    struct ck__buf b = {0};
    size_t st = ck__pb_begin_len(&b, 1);
    put_str(&b, 1, "ct-1");
    size_t meta = ck__pb_begin_len(&b, 2); /* what kubelet's verifyContainerStatus requires */
    put_str(&b, 1, "app");
    ck__pb_end_len(&b, meta);
    ck__pb_put_uint(&b, 3, (uint64_t)state);
    ck__pb_put_uint(&b, 4, 1600000000LL * CK_SEC);
    size_t image = ck__pb_begin_len(&b, 8);
    put_str(&b, 1, "registry.test/app:v1");
    ck__pb_end_len(&b, image);
    ck__pb_put_uint(&b, 5, (uint64_t)started);
    ck__pb_put_uint(&b, 6, (uint64_t)finished);
    ck__pb_put_uint(&b, 7, (uint64_t)exit_code);
    put_str(&b, 9, "registry.test/app@sha256:aa");
    if (reason)
        put_str(&b, 10, reason);
    ck__pb_end_len(&b, st);
    answer(f, "ContainerStatus", &b);
}

static void test_container_status_mapping(void **state)
{
    struct fake *f = *state;
    struct pod *pod = fake_pod(f);
    struct ck__rt_state st;
    char path[256];
    const int64_t started = 1700000000LL * CK_SEC, finished = started + 5 * CK_SEC;
    answer_container_status(f, CK__CRI_RUNNING, started, 0, 0, NULL);
    assert_int_equal(f->rt->ops->state(f->rt, &pod->p, "app", 0, "fakecri://ct-1", &st), 0);
    assert_string_equal(str(request(f, "ContainerStatus", 0), "1"), "ct-1"); /* bare id */
    assert_true(st.running);
    assert_int_equal(st.started_ns, started);
    assert_string_equal(st.image_ref, "registry.test/app@sha256:aa");
    /* exited, killed by the OOM killer */
    answer_container_status(f, CK__CRI_EXITED, started, finished, 137, "OOMKilled");
    assert_int_equal(f->rt->ops->state(f->rt, &pod->p, "app", 0, "fakecri://ct-1", &st), 0);
    assert_false(st.running);
    assert_int_equal(st.exit.code, 137);
    assert_int_equal(st.exit.signal, 9);
    assert_true(st.exit.oom_killed);
    assert_int_equal(st.exit.finished_ns, finished);
    snprintf(path, sizeof(path), "%s/containers/app/0/exit", pod->dir); /* the log reader's */
    assert_int_equal(access(path, F_OK), 0);
    /* exited with an error of its own */
    answer_container_status(f, CK__CRI_EXITED, started, finished, 3, "Error");
    assert_int_equal(f->rt->ops->state(f->rt, &pod->p, "app", 1, "fakecri://ct-1", &st), 0);
    assert_false(st.running);
    assert_int_equal(st.exit.code, 3);
    assert_int_equal(st.exit.signal, 0);
    assert_false(st.exit.oom_killed);
    /* created, not started yet: counted as running */
    answer_container_status(f, CK__CRI_CREATED, 0, 0, 0, NULL);
    assert_int_equal(f->rt->ops->state(f->rt, &pod->p, "app", 0, "fakecri://ct-1", &st), 0);
    assert_true(st.running);
    /* gone: CK_ENOENT; the runtime unreachable or its answer malformed: nothing known
       to have changed */
    answer_status(f, "ContainerStatus", 5, "container ct-1 not found");
    assert_int_equal(f->rt->ops->state(f->rt, &pod->p, "app", 0, "fakecri://ct-1", &st), CK_ENOENT);
    answer_status(f, "ContainerStatus", 14, "connection refused");
    assert_int_equal(f->rt->ops->state(f->rt, &pod->p, "app", 0, "fakecri://ct-1", &st), 0);
    assert_true(st.running);
    struct ck__buf b = {0};
    size_t m = ck__pb_begin_len(&b, 1);
    put_str(&b, 1, "ct-1"); /* no name, creation time, image */
    ck__pb_put_uint(&b, 3, CK__CRI_EXITED);
    ck__pb_end_len(&b, m);
    answer(f, "ContainerStatus", &b);
    assert_int_equal(f->rt->ops->state(f->rt, &pod->p, "app", 0, "fakecri://ct-1", &st), 0);
    assert_true(st.running);
    script(f, "ContainerStatus", GRPC_FAKE_MESSAGE, 0, NULL, "\x0a\x20\x0a\x04", 4);
    assert_int_equal(f->rt->ops->state(f->rt, &pod->p, "app", 0, "fakecri://ct-1", &st), 0);
    assert_true(st.running);
}

static void test_find_newest_attempt(void **state)
{
    struct fake *f = *state;
    struct pod *pod = fake_pod(f);
    char id[192];
    int attempt = -1;
    struct ck__buf b = {0};
    put_container(&b, "ct-a", "app", 0, CK__CRI_EXITED);
    put_container(&b, "ct-c", "app", 2, CK__CRI_RUNNING);
    put_container(&b, "ct-b", "app", 1, CK__CRI_EXITED);
    answer(f, "ListContainers", &b);
    assert_int_equal(f->rt->ops->find(f->rt, &pod->p, "app", &attempt, id, sizeof(id)), 0);
    assert_int_equal(attempt, 2);
    assert_string_equal(id, "fakecri://ct-c");
    struct ck__pb_reader l = request(f, "ListContainers", 0);
    assert_string_equal(map_get(l, "1.4", "io.kubernetes.pod.uid"), POD_UID);
    assert_string_equal(map_get(l, "1.4", "io.kubernetes.container.name"), "app");
    assert_false(has(l, "1.2")); /* any state */
    /* none, and a failed list */
    assert_int_equal(f->rt->ops->find(f->rt, &pod->p, "app", &attempt, id, sizeof(id)), CK_ENOENT);
    answer_status(f, "ListContainers", 14, "connection refused");
    assert_int_equal(f->rt->ops->find(f->rt, &pod->p, "app", &attempt, id, sizeof(id)), CK_EIO);
}

static void test_stop_container_with_grace_period(void **state)
{
    struct fake *f = *state;
    struct pod *pod = fake_pod(f);
    int accepted = grpc_fake_accepted(f->srv);
    f->rt->ops->stop(f->rt, &pod->p, "fakecri://ct-1", 45);
    wait_for_call(f, "StopContainer");
    struct ck__pb_reader r = request(f, "StopContainer", 0);
    assert_string_equal(str(r, "1"), "ct-1");
    assert_int_equal(num(r, "2"), 45);
    /* on a connection of its own, closed once the call is over */
    assert_int_equal(grpc_fake_accepted(f->srv), accepted + 1);
    for (int i = 0; i < 500 && grpc_fake_open_conns(f->srv) > 1; i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    assert_int_equal(grpc_fake_open_conns(f->srv), 1);
}

static void test_exec_sync_for_probes(void **state)
{
    struct fake *f = *state;
    struct pod *pod = fake_pod(f);
    char msg[256];
    int code = -1;
    static char *const argv[] = {"cat", "/tmp/healthy", NULL};
    struct ck__buf b = {0};
    put_str(&b, 1, "ok\n");
    put_str(&b, 2, "warn\n");
    ck__pb_put_uint(&b, 3, 3);
    answer(f, "ExecSync", &b);
    assert_int_equal(f->rt->ops->exec(f->rt, &pod->p, "fakecri://ct-1", argv, NULL, NULL,
                                      (int64_t)1500 * 1000 * 1000, &code, msg, sizeof(msg)),
                     0);
    assert_int_equal(code, 3);
    assert_string_equal(msg, "ok\nwarn\n");
    struct ck__pb_reader r = request(f, "ExecSync", 0);
    assert_string_equal(str(r, "1"), "ct-1");
    assert_string_equal(str(r, "2[0]"), "cat");
    assert_string_equal(str(r, "2[1]"), "/tmp/healthy");
    assert_int_equal(num(r, "3"), 2); /* 1.5 s rounded up */
    /* the runtime's timeout, and another failure */
    answer_status(f, "ExecSync", 4, "timeout 2s exceeded");
    assert_int_equal(f->rt->ops->exec(f->rt, &pod->p, "fakecri://ct-1", argv, NULL, NULL, CK_SEC,
                                      &code, msg, sizeof(msg)),
                     CK_ETIMEDOUT);
    assert_non_null(strstr(msg, "DeadlineExceeded"));
    answer_status(f, "ExecSync", 5, "container ct-1 not found");
    assert_int_equal(f->rt->ops->exec(f->rt, &pod->p, "fakecri://ct-1", argv, NULL, NULL, CK_SEC,
                                      &code, msg, sizeof(msg)),
                     CK_EIO);
    assert_non_null(strstr(msg, "code = NotFound desc = container ct-1 not found"));
}

static void test_streaming_urls(void **state)
{
    struct fake *f = *state;
    struct ck_err err = {0};
    char *url = NULL;
    static char *const argv[] = {"sh", NULL};
    answer_string(f, "Exec", "http://127.0.0.1:35000/exec/tok1");
    assert_int_equal(f->rt->ops->exec_url(f->rt, "fakecri://ct-1", argv, true, true, &url, &err),
                     0);
    assert_string_equal(url, "http://127.0.0.1:35000/exec/tok1");
    free(url);
    struct ck__pb_reader r = request(f, "Exec", 0);
    assert_string_equal(str(r, "1"), "ct-1");
    assert_string_equal(str(r, "2"), "sh");
    assert_int_equal(num(r, "3"), 1); /* tty */
    assert_int_equal(num(r, "4"), 1); /* stdin */
    assert_int_equal(num(r, "5"), 1); /* stdout */
    assert_int_equal(num(r, "6"), 0); /* no stderr with a tty */
    answer_string(f, "Attach", "http://127.0.0.1:35000/attach/tok2");
    assert_int_equal(f->rt->ops->attach_url(f->rt, "fakecri://ct-1", false, false, &url, &err), 0);
    assert_string_equal(url, "http://127.0.0.1:35000/attach/tok2");
    free(url);
    r = request(f, "Attach", 0);
    assert_string_equal(str(r, "1"), "ct-1");
    assert_int_equal(num(r, "2"), 0);
    assert_int_equal(num(r, "4"), 1);
    assert_int_equal(num(r, "5"), 1);
    answer_string(f, "PortForward", "http://127.0.0.1:35000/portforward/tok3");
    assert_int_equal(f->rt->ops->port_forward_url(f->rt, "sb-1", 8080, &url, &err), 0);
    assert_string_equal(url, "http://127.0.0.1:35000/portforward/tok3");
    free(url);
    r = request(f, "PortForward", 0);
    assert_string_equal(str(r, "1"), "sb-1");
    assert_int_equal(packed(r, "2", 0), 8080);
    /* failures: the error, no URL */
    url = NULL;
    answer_status(f, "Exec", 5, "container ct-1 not found");
    assert_int_equal(f->rt->ops->exec_url(f->rt, "fakecri://ct-1", argv, false, false, &url, &err),
                     CK_ENOENT);
    assert_null(url);
    script(f, "Attach", GRPC_FAKE_RAW, 0, NULL, "garbage", 7);
    assert_int_equal(f->rt->ops->attach_url(f->rt, "fakecri://ct-1", false, false, &url, &err),
                     CK_EIO);
    assert_null(url);
    assert_string_equal(err.msg, "cri: RuntimeService Attach: the answer is not one gRPC message");
}

/* A ContainerStats message's fields (of ListContainerStatsResponse.stats). */
static void put_stats(struct ck__buf *b, uint32_t no, const char *id, int64_t ts, uint64_t cpu,
                      uint64_t ws)
{
    size_t m = ck__pb_begin_len(b, no), a = ck__pb_begin_len(b, 1);
    put_str(b, 1, id);
    ck__pb_end_len(b, a);
    size_t c = ck__pb_begin_len(b, 2);
    ck__pb_put_uint(b, 1, (uint64_t)ts);
    put_wrapped(b, 2, cpu);
    ck__pb_end_len(b, c);
    size_t mem = ck__pb_begin_len(b, 3);
    ck__pb_put_uint(b, 1, (uint64_t)ts);
    put_wrapped(b, 2, ws);
    ck__pb_end_len(b, mem);
    ck__pb_end_len(b, m);
}

static void test_container_and_pod_stats(void **state)
{
    struct fake *f = *state;
    struct ck_err err = {0};
    struct ck__rt_stats_ref refs[2] = {0};
    struct ck__rt_stats got[2];
    snprintf(refs[0].id, sizeof(refs[0].id), "fakecri://ct-1");
    snprintf(refs[0].sandbox_id, sizeof(refs[0].sandbox_id), "sb-1");
    snprintf(refs[1].id, sizeof(refs[1].id), "fakecri://ct-unlisted");
    snprintf(refs[1].sandbox_id, sizeof(refs[1].sandbox_id), "sb-2");
    struct ck__buf b = {0};
    put_stats(&b, 1, "ct-other", 5, 1, 1);
    put_stats(&b, 1, "ct-1", 1700000000000000000LL, 123456789, 4 << 20);
    answer(f, "ListContainerStats", &b);
    assert_int_equal(f->rt->ops->container_stats(f->rt, refs, 2, got, &err), 0);
    assert_true(got[0].has_cpu && got[0].has_memory);
    assert_int_equal(got[0].cpu_core_ns, 123456789);
    assert_int_equal(got[0].working_set_bytes, 4 << 20);
    assert_int_equal(got[0].cpu_time, 1700000000000000000LL);
    assert_false(got[1].has_cpu || got[1].has_memory); /* not listed: unknown */
    struct ck__pb_reader all = request(f, "ListContainerStats", 0);
    assert_true(all.p == all.end); /* no filter: all of them */
    /* the pods' own: their sandboxes' figures */
    size_t sb = ck__pb_begin_len(&b, 1), attr = ck__pb_begin_len(&b, 1);
    put_str(&b, 1, "sb-2");
    ck__pb_end_len(&b, attr);
    size_t lin = ck__pb_begin_len(&b, 2), c = ck__pb_begin_len(&b, 1);
    ck__pb_put_uint(&b, 1, 1700000001000000000LL);
    put_wrapped(&b, 2, 999);
    ck__pb_end_len(&b, c);
    c = ck__pb_begin_len(&b, 2);
    put_wrapped(&b, 2, 8 << 20);
    ck__pb_end_len(&b, c);
    ck__pb_end_len(&b, lin);
    ck__pb_end_len(&b, sb);
    answer(f, "ListPodSandboxStats", &b);
    assert_int_equal(f->rt->ops->pod_stats(f->rt, refs, 2, got, &err), 0);
    assert_false(got[0].has_cpu || got[0].has_memory);
    assert_true(got[1].has_cpu && got[1].has_memory);
    assert_int_equal(got[1].cpu_core_ns, 999);
    assert_int_equal(got[1].working_set_bytes, 8 << 20);
    assert_int_equal(got[1].cpu_time, 1700000001000000000LL);
    /* a pod's memory without a CPU sample (whose timestamp is the sample's): now */
    sb = ck__pb_begin_len(&b, 1), attr = ck__pb_begin_len(&b, 1);
    put_str(&b, 1, "sb-2");
    ck__pb_end_len(&b, attr);
    lin = ck__pb_begin_len(&b, 2), c = ck__pb_begin_len(&b, 2);
    put_wrapped(&b, 2, 8 << 20);
    ck__pb_end_len(&b, c);
    ck__pb_end_len(&b, lin);
    ck__pb_end_len(&b, sb);
    answer(f, "ListPodSandboxStats", &b);
    struct timespec t0, t1;
    clock_gettime(CLOCK_REALTIME, &t0);
    assert_int_equal(f->rt->ops->pod_stats(f->rt, refs, 2, got, &err), 0);
    clock_gettime(CLOCK_REALTIME, &t1);
    assert_true(got[1].has_memory && !got[1].has_cpu);
    assert_int_equal(got[1].working_set_bytes, 8 << 20);
    assert_in_range(got[1].memory_time, (int64_t)t0.tv_sec * CK_SEC + t0.tv_nsec,
                    (int64_t)t1.tv_sec * CK_SEC + t1.tv_nsec);
    /* failures: the error, nothing known */
    answer_status(f, "ListContainerStats", 12, "unknown method ListContainerStats");
    assert_int_equal(f->rt->ops->container_stats(f->rt, refs, 2, got, &err), CK_EIO);
    assert_non_null(strstr(err.msg, "code = Unimplemented"));
    script(f, "ListPodSandboxStats", GRPC_FAKE_RESET, 0, NULL, NULL, 0);
    assert_int_equal(f->rt->ops->pod_stats(f->rt, refs, 2, got, &err), CK_EIO);
    assert_non_null(strstr(err.msg, "stream reset"));
    assert_false(got[1].has_cpu);
}

static void test_pod_remove_and_orphans(void **state)
{
    struct fake *f = *state;
    struct pod *pod = fake_pod(f);
    char buf[512];
    forget_calls(f);
    struct ck__buf b = {0};
    put_container(&b, "ct-1", "app", 0, CK__CRI_EXITED);
    put_container(&b, "ct-2", "app", 1, CK__CRI_RUNNING);
    answer(f, "ListContainers", &b);
    put_sandbox(&b, "sb-1", "web-0", POD_UID, 0, CK__CRI_SANDBOX_READY, 1);
    answer(f, "ListPodSandbox", &b);
    snprintf(pod->p.sandbox_id, sizeof(pod->p.sandbox_id), "sb-1");
    f->rt->ops->pod_remove(f->rt, &pod->p);
    assert_string_equal(methods(f, buf, sizeof(buf)),
                        "ListContainers,RemoveContainer,RemoveContainer,ListPodSandbox,"
                        "StopPodSandbox,RemovePodSandbox");
    assert_string_equal(map_get(request(f, "ListContainers", 0), "1.4", "io.kubernetes.pod.uid"),
                        POD_UID);
    assert_string_equal(str(request(f, "RemoveContainer", 0), "1"), "ct-1");
    assert_string_equal(str(request(f, "RemoveContainer", 1), "1"), "ct-2");
    assert_string_equal(str(request(f, "StopPodSandbox", 0), "1"), "sb-1");
    assert_string_equal(str(request(f, "RemovePodSandbox", 0), "1"), "sb-1");
    assert_string_equal(pod->p.sandbox_id, "");
    /* orphans: the sandboxes of pods the node no longer has, not the live ones' nor others' */
    forget_calls(f);
    put_sandbox(&b, "sb-live", "web-0", POD_UID, 0, CK__CRI_SANDBOX_READY, 1);
    put_sandbox(&b, "sb-orphan", "old-0", "orphan-uid", 0, CK__CRI_SANDBOX_NOTREADY, 1);
    answer(f, "ListPodSandbox", &b);
    put_sandbox(&b, "sb-orphan", "old-0", "orphan-uid", 0, CK__CRI_SANDBOX_NOTREADY, 1);
    answer(f, "ListPodSandbox", &b);
    answer_status(f, "StopPodSandbox", 14, "connection refused"); /* logged, not fatal */
    const char *live[] = {POD_UID};
    f->rt->ops->remove_orphans(f->rt, live, 1);
    assert_string_equal(methods(f, buf, sizeof(buf)),
                        "ListPodSandbox,ListContainers,ListPodSandbox,StopPodSandbox");
    assert_false(has(request(f, "ListPodSandbox", 0), "1.3")); /* every sandbox */
    assert_string_equal(map_get(request(f, "ListPodSandbox", 1), "1.3", "io.kubernetes.pod.uid"),
                        "orphan-uid");
    assert_string_equal(str(request(f, "StopPodSandbox", 0), "1"), "sb-orphan");
}

/* ContainerStatusResponse of a container whose log is log_path. */
static void answer_status_with_log(struct fake *f, const char *id, const char *log_path)
{
    struct ck__buf b = {0};
    size_t st = ck__pb_begin_len(&b, 1);
    put_str(&b, 1, id);
    size_t meta = ck__pb_begin_len(&b, 2);
    put_str(&b, 1, "app");
    ck__pb_end_len(&b, meta);
    ck__pb_put_uint(&b, 3, CK__CRI_RUNNING);
    ck__pb_put_uint(&b, 4, 1600000000LL * CK_SEC);
    size_t image = ck__pb_begin_len(&b, 8);
    put_str(&b, 1, "registry.test/app:v1");
    ck__pb_end_len(&b, image);
    put_str(&b, 9, "registry.test/app@sha256:aa");
    put_str(&b, 15, log_path);
    ck__pb_end_len(&b, st);
    answer(f, "ContainerStatus", &b);
}

static void test_gc_removes_dead_containers_and_old_sandboxes(void **state)
{
    struct fake *f = *state;
    char buf[512], log[300], attempt_dir[256];
    /* the pod's container: attempts 0 and 1 dead, 2 running; a container not the agent's */
    struct ck__buf b = {0};
    put_container(&b, "ct-a", "app", 0, CK__CRI_EXITED);
    put_container(&b, "ct-c", "app", 2, CK__CRI_RUNNING);
    put_container(&b, "ct-b", "app", 1, CK__CRI_EXITED);
    size_t m = ck__pb_begin_len(&b, 1);
    put_str(&b, 1, "ct-foreign");
    ck__pb_put_uint(&b, 6, CK__CRI_EXITED);
    ck__pb_end_len(&b, m);
    answer(f, "ListContainers", &b);
    /* attempt 0's log and its directory, which go with it */
    snprintf(attempt_dir, sizeof(attempt_dir), "%s/app-0", f->dir);
    snprintf(log, sizeof(log), "%s.log", attempt_dir);
    mkdir(attempt_dir, 0755);
    scratch_put(log, "old\n", "w");
    answer_status_with_log(f, "ct-a", log);
    /* the sandboxes: the newest READY, an old one holding nothing, an older one holding
       a container (of ListContainers' second answer) */
    put_sandbox(&b, "sb-2", "web-0", POD_UID, 2, CK__CRI_SANDBOX_READY, 3);
    put_sandbox(&b, "sb-1", "web-0", POD_UID, 1, CK__CRI_SANDBOX_NOTREADY, 2);
    put_sandbox(&b, "sb-0", "web-0", POD_UID, 0, CK__CRI_SANDBOX_NOTREADY, 1);
    answer(f, "ListPodSandbox", &b);
    m = ck__pb_begin_len(&b, 1);
    put_str(&b, 1, "ct-in-sb-0");
    put_str(&b, 2, "sb-0");
    ck__pb_end_len(&b, m);
    answer(f, "ListContainers", &b);
    forget_calls(f);
    struct ck__rt_gc_policy policy = {
        .min_age = 0, .max_per_pod_container = 1, .max_containers = -1};
    struct ck__rt_gc_keep keep[] = {{POD_UID, "app", 2}};
    f->rt->ops->gc(f->rt, &policy, keep, 1);
    /* one dead attempt kept (the newest), the older removed with its log; then sb-1 */
    assert_string_equal(methods(f, buf, sizeof(buf)),
                        "ListContainers,ContainerStatus,RemoveContainer,ListPodSandbox,"
                        "ListContainers,StopPodSandbox,RemovePodSandbox");
    assert_false(has(request(f, "ListContainers", 0), "1.2")); /* any state */
    assert_string_equal(str(request(f, "ContainerStatus", 0), "1"), "ct-a");
    assert_string_equal(str(request(f, "RemoveContainer", 0), "1"), "ct-a");
    assert_int_equal(access(log, F_OK), -1);
    assert_int_equal(access(attempt_dir, F_OK), -1);
    assert_string_equal(str(request(f, "StopPodSandbox", 0), "1"), "sb-1");
    assert_string_equal(str(request(f, "RemovePodSandbox", 0), "1"), "sb-1");
    /* the runtime failing the list: nothing removed */
    forget_calls(f);
    answer_status(f, "ListContainers", 14, "connection refused");
    answer_status(f, "ListPodSandbox", 14, "connection refused");
    f->rt->ops->gc(f->rt, &policy, keep, 1);
    assert_string_equal(methods(f, buf, sizeof(buf)), "ListContainers,ListPodSandbox");
}

static void test_rotate_logs_reopens(void **state)
{
    struct fake *f = *state;
    char buf[256], log[256], rotated[300];
    snprintf(log, sizeof(log), "%s/0.log", f->dir);
    scratch_put(log, "0123456789abcdef\n", "w");
    struct ck__buf b = {0};
    put_container(&b, "ct-run", "app", 0, CK__CRI_RUNNING);
    put_container(&b, "ct-dead", "app", 1, CK__CRI_EXITED); /* listed anyway: left alone */
    answer(f, "ListContainers", &b);
    answer_status_with_log(f, "ct-run", log);
    forget_calls(f);
    f->rt->ops->rotate_logs(f->rt, 10, 5);
    assert_string_equal(methods(f, buf, sizeof(buf)),
                        "ListContainers,ContainerStatus,ReopenContainerLog");
    assert_int_equal(num(request(f, "ListContainers", 0), "1.2.1"), CK__CRI_RUNNING);
    assert_string_equal(str(request(f, "ReopenContainerLog", 0), "1"), "ct-run");
    size_t n = 0;
    char **files = ck__log_rotated_files(log, false, &n);
    assert_int_equal(n, 1);
    snprintf(rotated, sizeof(rotated), "%s", files[0]);
    free(files[0]);
    free(files);
    assert_int_equal(access(log, F_OK), -1); /* the runtime would make it again */
    /* the reopen failing: the rename undone, to be tried again */
    rename(rotated, log);
    put_container(&b, "ct-run", "app", 0, CK__CRI_RUNNING);
    answer(f, "ListContainers", &b);
    answer_status_with_log(f, "ct-run", log);
    answer_status(f, "ReopenContainerLog", 2, "failed to reopen");
    f->rt->ops->rotate_logs(f->rt, 10, 5);
    assert_int_equal(access(log, F_OK), 0);
    files = ck__log_rotated_files(log, false, &n);
    assert_int_equal(n, 0);
    free(files);
}

/* An Image of ListImagesResponse. */
static void put_image(struct ck__buf *b, const char *id, const char *tag, uint64_t size,
                      bool pinned)
{
    size_t m = ck__pb_begin_len(b, 1);
    put_str(b, 1, id);
    put_str(b, 2, tag);
    ck__pb_put_uint(b, 4, size);
    ck__pb_put_uint(b, 8, pinned);
    ck__pb_end_len(b, m);
}

static void test_image_gc_removes_unused_images(void **state)
{
    struct fake *f = *state;
    char buf[512];
    struct ck_err err = {0};
    struct ck__buf b = {0};
    /* the image filesystem: the scratch directory's */
    size_t fs = ck__pb_begin_len(&b, 1), id = ck__pb_begin_len(&b, 2);
    put_str(&b, 1, f->dir);
    ck__pb_end_len(&b, id);
    ck__pb_end_len(&b, fs);
    answer(f, "ImageFsInfo", &b);
    put_image(&b, "sha256:used", "registry.test/app:v1", 100, false);
    put_image(&b, "sha256:unused", "registry.test/old:v0", 200, false);
    put_image(&b, "sha256:pinned", "registry.test/keep:v1", 300, true);
    put_image(&b, "sha256:pause", "registry.test/pause:3.9", 400, false);
    answer(f, "ListImages", &b);
    size_t m = ck__pb_begin_len(&b, 1);
    put_str(&b, 1, "ct-1");
    put_str(&b, 5, "sha256:used");
    ck__pb_end_len(&b, m);
    answer(f, "ListContainers", &b);
    /* the sandbox image: Status's info "config" (containerd's), then its ImageStatus */
    json_t *config = json_pack("{s:s}", "sandboxImage", "registry.test/pause:3.9");
    char *text = json_dumps(config, JSON_COMPACT);
    put_kv(&b, 2, "config", text);
    free(text);
    json_decref(config);
    answer(f, "Status", &b);
    answer_image(f, "sha256:pause");
    forget_calls(f);
    /* over any threshold: everything that may go goes, and it is not enough */
    struct ck__rt_image_gc_policy policy = {.high_threshold = 0, .low_threshold = 0, .min_age = 0};
    bool is_short = false;
    int r = f->rt->ops->image_gc(f->rt, &policy, &is_short, &err);
    assert_string_equal(methods(f, buf, sizeof(buf)),
                        "ImageFsInfo,ListImages,ListContainers,Status,ImageStatus,RemoveImage");
    assert_true(num(request(f, "Status", 0), "1")); /* verbose: its info */
    assert_string_equal(str(request(f, "ImageStatus", 0), "1.1"), "registry.test/pause:3.9");
    assert_string_equal(str(request(f, "RemoveImage", 0), "1.1"), "sha256:unused");
    assert_int_equal(r, CK_EIO);
    assert_true(is_short);
    assert_non_null(strstr(err.msg, "only found 200 bytes eligible to free"));
    /* ImageFsInfo failing: nothing listed, nothing removed */
    forget_calls(f);
    answer_status(f, "ImageFsInfo", 12, "unknown method ImageFsInfo");
    assert_int_equal(f->rt->ops->image_gc(f->rt, &policy, &is_short, &err), CK_EIO);
    assert_string_equal(methods(f, buf, sizeof(buf)), "ImageFsInfo");
    assert_non_null(strstr(err.msg, "code = Unimplemented"));
}

static void test_single_stats_calls(void **state)
{
    struct fake *f = *state;
    struct ck__cri *c = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck__cri_open(f->endpoint, NULL, 5000, &c, &err), 0);
    struct ck__buf b = {0};
    put_stats(&b, 1, "ct-1", 1700000000000000000LL, 42, 4096);
    answer(f, "ContainerStats", &b);
    struct ck__cri_container_stats cs;
    assert_int_equal(ck__cri_container_stats(c, "ct-1", &cs, &err), 0);
    assert_string_equal(str(request(f, "ContainerStats", 0), "1"), "ct-1");
    assert_string_equal(cs.id, "ct-1");
    assert_int_equal(cs.usage_core_nano_seconds, 42);
    assert_int_equal(cs.working_set_bytes, 4096);
    ck__cri_container_stats_release(&cs);
    size_t sb = ck__pb_begin_len(&b, 1), attr = ck__pb_begin_len(&b, 1);
    put_str(&b, 1, "sb-1");
    size_t meta = ck__pb_begin_len(&b, 2);
    put_str(&b, 1, "web-0");
    put_str(&b, 2, POD_UID);
    put_str(&b, 3, "default");
    ck__pb_end_len(&b, meta);
    ck__pb_end_len(&b, attr);
    size_t lin = ck__pb_begin_len(&b, 2), cpu = ck__pb_begin_len(&b, 1);
    put_wrapped(&b, 2, 77);
    ck__pb_end_len(&b, cpu);
    put_stats(&b, 5, "ct-1", 1, 42, 4096);
    ck__pb_end_len(&b, lin);
    ck__pb_end_len(&b, sb);
    answer(f, "PodSandboxStats", &b);
    struct ck__cri_sandbox_stats ss;
    assert_int_equal(ck__cri_sandbox_stats(c, "sb-1", &ss, &err), 0);
    assert_string_equal(str(request(f, "PodSandboxStats", 0), "1"), "sb-1");
    assert_string_equal(ss.id, "sb-1");
    assert_string_equal(ss.uid, POD_UID);
    assert_int_equal(ss.usage.usage_core_nano_seconds, 77);
    assert_int_equal(ss.n_containers, 1);
    assert_string_equal(ss.containers[0].id, "ct-1");
    ck__cri_sandbox_stats_release(&ss);
    /* gone, and an answer without its stats */
    answer_status(f, "ContainerStats", 5, "container ct-9 not found");
    assert_int_equal(ck__cri_container_stats(c, "ct-9", &cs, &err), CK_ENOENT);
    assert_int_equal(ck__cri_sandbox_stats(c, "sb-9", &ss, &err), CK_EIO);
    assert_string_equal(err.msg, "cri: RuntimeService PodSandboxStats: malformed answer");
    ck__cri_close(c);
}

/*
 * A pod's whole start as the pod sync makes it, then its container's state and stats,
 * each answer scripted afresh: 0 when every step worked, else the first step's error.
 */
static int run_pod(struct fake *f, struct pod *pod)
{
    char id[192], reason[64];
    struct ck_err err = {0};
    struct ck__rt_state st;
    struct ck__rt_stats stats;
    struct ck__rt_stats_ref ref = {.id = "fakecri://ct-1", .sandbox_id = "sb-1"};
    bool paused = ck__alloc_hook_pause(true); /* the fake's answers are not under test */
    forget_answers(f);
    pod->p.sandbox_id[0] = 0;
    answer_string(f, "RunPodSandbox", "sb-1");
    answer_sandbox_status(f, "sb-1", "10.244.0.7");
    answer_image(f, NULL);
    answer_string(f, "PullImage", "sha256:pulled");
    answer_string(f, "CreateContainer", "ct-1");
    answer_container_status(f, CK__CRI_EXITED, 1, 2, 1, "Error");
    struct ck__buf b = {0};
    put_stats(&b, 1, "ct-1", 1, 2, 3);
    answer(f, "ListContainerStats", &b);
    ck__alloc_hook_pause(paused);
    int r = f->rt->ops->pod_start(f->rt, &pod->p, reason, sizeof(reason), &err);
    if (r == 0)
        r = start_container(f, pod, false, id, reason, &err);
    if (r == 0)
        r = f->rt->ops->state(f->rt, &pod->p, "app", 0, id, &st);
    if (r == 0 && st.running) /* a failed status reads as "nothing changed" */
        r = CK_EIO;
    if (r == 0)
        r = f->rt->ops->container_stats(f->rt, &ref, 1, &stats, &err);
    if (r == 0 && !stats.has_cpu)
        r = CK_EIO;
    return r;
}

/* Allocation failure at every step of the CRI client under the runtime: a clean error. */
static void test_allocation_failures(void **state)
{
    struct fake *f = *state;
    struct pod *pod = fake_pod(f);
    int r = -1;
    unsigned long n, failed = 0;
    for (n = 1; n < 2000 && r != 0; n++) {
        ck__alloc_fail_at(n, false);
        r = run_pod(f, pod);
        ck__alloc_fail_at(0, false);
        failed += r != 0;
    }
    if (r != 0)
        fail_msg("still failing after %lu allocations: %d", n, r);
    assert_true(failed > 0); /* some allocation did fail first */
}

/* ---- failures of the transport and of the answers --------------------------------- */

static void test_malformed_answers(void **state)
{
    struct fake *f = *state;
    struct pod *pod = fake_pod(f);
    char reason[64];
    struct ck_err err = {0};
    static const struct {
        enum grpc_fake_kind kind;
        const char *bytes;
        size_t len;
        const char *words;
    } cases[] = {
        /* field 1 (id) says 16 bytes, 3 follow */
        {GRPC_FAKE_MESSAGE, "\x0a\x10sb-", 5, "RunPodSandbox: malformed answer"},
        /* a string with a NUL in it */
        {GRPC_FAKE_MESSAGE, "\x0a\x03s\0b", 5, "RunPodSandbox: malformed answer"},
        /* the id as a varint */
        {GRPC_FAKE_MESSAGE, "\x08\x01", 2, "RunPodSandbox: malformed answer"},
        /* bytes without a gRPC message's prefix */
        {GRPC_FAKE_RAW, "\x0a\x04sb-1", 6, "the answer is not one gRPC message"},
        /* a prefix that says more than comes */
        {GRPC_FAKE_RAW, "\x00\x00\x00\x00\x09\x0a\x04sb-1", 11,
         "the answer is not one gRPC message"},
        /* a compressed message */
        {GRPC_FAKE_RAW, "\x01\x00\x00\x00\x06\x0a\x04sb-1", 11,
         "the answer is not one gRPC message"},
        {GRPC_FAKE_RESET, NULL, 0, "stream reset"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        script(f, "RunPodSandbox", cases[i].kind, 0, NULL, cases[i].bytes, cases[i].len);
        assert_int_equal(f->rt->ops->pod_start(f->rt, &pod->p, reason, sizeof(reason), &err),
                         CK_EIO);
        if (!strstr(err.msg, cases[i].words))
            fail_msg("case %zu: %s", i, err.msg);
        assert_string_equal(pod->p.sandbox_id, "");
    }
    /* the next call works, on a new connection where the last one failed */
    start_pod(f, pod);
}

static void test_call_times_out_when_runtime_never_answers(void **state)
{
    struct fake *f = *state;
    struct ck__cri *c = NULL;
    struct ck_err err = {0};
    struct ck__cri_version v;
    /* the agent's own client, with a short timeout (the runtime's is kubelet's 2 min) */
    assert_int_equal(ck__cri_open(f->endpoint, NULL, 300, &c, &err), 0);
    script(f, "Version", GRPC_FAKE_SILENT, 0, NULL, NULL, 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(ck__cri_version(c, "v1", &v, &err), CK_EIO);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_non_null(strstr(err.msg, "cri: RuntimeService Version: "));
    assert_non_null(strstr(err.msg, "timed out"));
    int64_t ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    assert_true(ms >= 250 && ms < 5000);
    /* the silent connection is dropped; the next call answers on a new one */
    assert_int_equal(ck__cri_version(c, "v1", &v, &err), 0);
    assert_string_equal(v.runtime_name, "fakecri");
    ck__cri_version_release(&v);
    ck__cri_close(c);
}

static void test_runtime_gone(void **state)
{
    struct fake *f = *state;
    struct ck_err err = {0};
    char reason[64];
    struct pod *pod = fake_pod(f);
    /* the socket closed under the agent: calls fail with the endpoint's words */
    grpc_fake_stop(f->srv);
    f->srv = NULL;
    unlink(f->sock);
    assert_true(f->rt->ops->pod_start(f->rt, &pod->p, reason, sizeof(reason), &err) < 0);
    assert_non_null(strstr(err.msg, "cri: RuntimeService ListPodSandbox: cannot connect to "));
    struct ck__rt_node_status ns;
    f->rt->ops->node_status(f->rt, &ns);
    assert_false(ns.ready);
    assert_string_equal(ns.message, "container runtime status check may not have completed yet");
    assert_null(ns.images);
    /* a runtime that is not there at all: no runtime, a clear error */
    struct ck__runtime *rt = NULL;
    struct ck_agent_config config = {.runtime_endpoint = f->endpoint};
    assert_int_equal(ck__runtime_cri_new(&config, &ctl, NULL, NULL, &rt, &err), CK_ENOENT);
    assert_non_null(strstr(err.msg, "container runtime endpoint"));
    assert_null(rt);
}

static void test_version_failures_fail_the_runtime(void **state)
{
    struct fake *f = *state;
    struct ck__runtime *rt = NULL;
    struct ck_err err = {0};
    char cni[128];
    snprintf(cni, sizeof(cni), "%s/cni", f->dir);
    struct ck_agent_config config = {
        .runtime_endpoint = f->endpoint, .cni_conf_dir = cni, .cni_bin_dir = cni};
    answer_status(f, "Version", 12, "unknown service runtime.v1.RuntimeService");
    assert_int_equal(ck__runtime_cri_new(&config, &ctl, NULL, NULL, &rt, &err), CK_EIO);
    assert_string_equal(err.msg, "cri: RuntimeService Version: rpc error: code = Unimplemented "
                                 "desc = unknown service runtime.v1.RuntimeService");
    assert_null(rt);
    script(f, "Version", GRPC_FAKE_MESSAGE, 0, NULL, "\x12\xff", 2);
    assert_int_equal(ck__runtime_cri_new(&config, &ctl, NULL, NULL, &rt, &err), CK_EIO);
    assert_string_equal(err.msg, "cri: RuntimeService Version: malformed answer");
    assert_null(rt);
    /* and then it answers */
    assert_int_equal(ck__runtime_cri_new(&config, &ctl, NULL, NULL, &rt, &err), 0);
    rt->ops->free(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_version_handshake, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_status_from_status_and_images, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_pod_sandbox_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sandbox_adopted_after_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_network_sandbox, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_range_given_by_the_agent, setup_fake, teardown),
        cmocka_unit_test_setup_teardown(test_no_sandbox_made_when_the_list_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_pod_sandbox_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_container_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pull_with_secret_and_its_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pull_tries_each_credential, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_and_start_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_container_status_mapping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_find_newest_attempt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_container_with_grace_period, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_sync_for_probes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streaming_urls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_container_and_pod_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_remove_and_orphans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gc_removes_dead_containers_and_old_sandboxes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rotate_logs_reopens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_image_gc_removes_unused_images, setup, teardown),
        cmocka_unit_test_setup_teardown(test_single_stats_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allocation_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_times_out_when_runtime_never_answers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_runtime_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_version_failures_fail_the_runtime, setup_fake,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
