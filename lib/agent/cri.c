/*
 * cri.c - the agent's client of a container runtime's CRI (k8s.io/cri-api,
 * package runtime.v1), as kubelet's remote runtime and image services
 * (k8s.io/cri-client pkg/remote_runtime.go, remote_image.go) call it: unary
 * gRPC calls over HTTP/2 on the runtime's unix socket (libckube-util's
 * grpc.c), messages written and read here on the protobuf wire layer with the
 * field numbers of cri-api's pkg/apis/runtime/v1/api.proto (v0.32).
 *
 * What it calls: RuntimeService Version, Status, RunPodSandbox,
 * StopPodSandbox, RemovePodSandbox, PodSandboxStatus, ListPodSandbox,
 * CreateContainer, StartContainer, StopContainer, RemoveContainer,
 * ListContainers, ContainerStatus, ExecSync, Exec, Attach, PortForward,
 * ReopenContainerLog, ContainerStats, ListContainerStats, PodSandboxStats and
 * ListPodSandboxStats; ImageService
 * ListImages, ImageStatus, PullImage, RemoveImage and ImageFsInfo. Deadlines
 * are kubelet's: the client's timeout, RunPodSandbox's own, StopContainer and
 * ExecSync the client's plus their own (ExecSync without one: none).
 * Requests leave defaults out as proto3 does; map fields go in the caller's
 * order, each entry with its key and value (as protobuf's runtimes write
 * them).
 *
 * Answers are untrusted: each is capped (16 MiB, kubelet's own limit on a CRI
 * message), must be exactly one uncompressed gRPC message, and is decoded
 * with bounded readers that never pass its end; a string with a NUL byte in
 * it, a field of the wrong wire type or a length past the end makes the whole
 * answer malformed (CK_EIO), never a partial result. Fields this client does
 * not know are skipped, as protobuf says. A failed call's error carries its
 * gRPC status as Go's gRPC prints it ("rpc error: code = NotFound desc =
 * ..."), the words kubelet's events show, after the service and method when
 * the whole fits in a ck_err's message (else without them, so that the
 * runtime's words, a registry's "401 Unauthorized" at their end, are not cut).
 *
 * Threading: calls from several threads run at once, each on a connection
 * of its own taken from the client's idle ones (up to IDLE_MAX per endpoint,
 * the runtime's and the image service's being one when they are the same) or
 * dialled; the lock guards only that list, so a StopContainer waiting out a
 * grace period or a slow ExecSync holds up no other call. A connection that
 * fails is closed; the next call takes another or dials again.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

/* kubelet's maxMsgSize for CRI answers (cri-client utils.go), plus the gRPC prefix */
#define MAX_ANSWER ((16u << 20) + 5)

/* Idle connections kept per endpoint for the next calls. */
#define IDLE_MAX 4

struct ck__cri {
    char *endpoint[2]; /* runtime, image */
    int timeout_ms;
    pthread_mutex_t lock; /* guards idle and n_idle */
    struct ck__grpc_conn *idle[2][IDLE_MAX];
    size_t n_idle[2];
};

enum { RUNTIME = 0, IMAGE = 1 };

/* ---- runtime.v1's messages (api.proto of cri-api v0.32) -------------------------- */

/* Field numbers by message. */
enum { VERSION_REQ_VERSION = 1 };
enum { VERSION_VERSION = 1, VERSION_NAME = 2, VERSION_RT_VERSION = 3, VERSION_API_VERSION = 4 };
enum { STATUS_REQ_VERBOSE = 1 };
enum { STATUS_STATUS = 1, STATUS_INFO = 2 }; /* StatusResponse */
enum { RUNTIME_STATUS_CONDITIONS = 1 };      /* RuntimeStatus */
enum { COND_TYPE = 1, COND_STATUS = 2, COND_REASON = 3, COND_MESSAGE = 4 };
enum { SPEC_IMAGE = 1 };             /* ImageSpec */
enum { FILTER_IMAGE = 1 };           /* ImageFilter */
enum { LIST_IMAGES_REQ_FILTER = 1 }; /* ListImagesRequest */
enum { LIST_IMAGES_IMAGES = 1 };     /* ListImagesResponse */
enum {                               /* Image */
       IMAGE_ID = 1,
       IMAGE_REPO_TAGS = 2,
       IMAGE_REPO_DIGESTS = 3,
       IMAGE_SIZE = 4,
       IMAGE_UID = 5,
       IMAGE_USERNAME = 6,
       IMAGE_PINNED = 8
};
enum { WRAPPER_VALUE = 1 }; /* Int64Value, UInt64Value */
enum { IMAGE_STATUS_REQ_IMAGE = 1, IMAGE_STATUS_REQ_VERBOSE = 2 };
enum { IMAGE_STATUS_IMAGE = 1 }; /* ImageStatusResponse */
enum { PULL_REQ_IMAGE = 1, PULL_REQ_AUTH = 2 };
enum { PULL_IMAGE_REF = 1 }; /* PullImageResponse */
enum {                       /* AuthConfig */
       AUTH_USERNAME = 1,
       AUTH_PASSWORD = 2,
       AUTH_AUTH = 3,
       AUTH_SERVER = 4,
       AUTH_IDENTITY_TOKEN = 5,
       AUTH_REGISTRY_TOKEN = 6
};
enum { REMOVE_REQ_IMAGE = 1 };
enum { FSINFO_IMAGE_FS = 1, FSINFO_CONTAINER_FS = 2 }; /* ImageFsInfoResponse */
enum { FS_TIMESTAMP = 1, FS_ID = 2, FS_USED_BYTES = 3, FS_INODES_USED = 4 };
enum { FS_ID_MOUNTPOINT = 1 };                   /* FilesystemIdentifier */
enum { KV_KEY = 1, KV_VALUE = 2 };               /* KeyValue, and a map<string, string>'s entries */
enum { NS_NETWORK = 1, NS_PID = 2, NS_IPC = 3 }; /* NamespaceOption */
enum { PROFILE_TYPE = 1, PROFILE_LOCALHOST_REF = 2 }; /* SecurityProfile */
enum { CAP_ADD = 1, CAP_DROP = 2 };                   /* Capability */
enum {                                                /* LinuxSandboxSecurityContext */
       SSC_NAMESPACES = 1,
       SSC_RUN_AS_USER = 3,
       SSC_READONLY_ROOTFS = 4,
       SSC_SUPPLEMENTAL_GROUPS = 5,
       SSC_PRIVILEGED = 6,
       SSC_RUN_AS_GROUP = 8,
       SSC_SECCOMP = 9
};
enum { /* LinuxContainerSecurityContext */
       CSC_CAPABILITIES = 1,
       CSC_PRIVILEGED = 2,
       CSC_NAMESPACES = 3,
       CSC_RUN_AS_USER = 5,
       CSC_RUN_AS_USERNAME = 6,
       CSC_READONLY_ROOTFS = 7,
       CSC_SUPPLEMENTAL_GROUPS = 8,
       CSC_NO_NEW_PRIVS = 11,
       CSC_RUN_AS_GROUP = 12,
       CSC_MASKED_PATHS = 13,
       CSC_READONLY_PATHS = 14,
       CSC_SECCOMP = 15
};
enum { /* LinuxContainerResources */
       RES_CPU_PERIOD = 1,
       RES_CPU_QUOTA = 2,
       RES_CPU_SHARES = 3,
       RES_MEMORY_LIMIT = 4,
       RES_OOM_SCORE_ADJ = 5,
       RES_MEMORY_SWAP_LIMIT = 10
};
enum { SB_META_NAME = 1, SB_META_UID = 2, SB_META_NAMESPACE = 3, SB_META_ATTEMPT = 4 };
enum { DNS_SERVERS = 1, DNS_SEARCHES = 2, DNS_OPTIONS = 3 }; /* DNSConfig */
enum { PORT_PROTOCOL = 1, PORT_CONTAINER = 2, PORT_HOST = 3, PORT_HOST_IP = 4 };
enum { SB_LINUX_CGROUP_PARENT = 1, SB_LINUX_SECURITY = 2, SB_LINUX_SYSCTLS = 3 };
enum { /* PodSandboxConfig */
       SBC_METADATA = 1,
       SBC_HOSTNAME = 2,
       SBC_LOG_DIRECTORY = 3,
       SBC_DNS = 4,
       SBC_PORT_MAPPINGS = 5,
       SBC_LABELS = 6,
       SBC_ANNOTATIONS = 7,
       SBC_LINUX = 8
};
enum { RUN_SB_REQ_CONFIG = 1, RUN_SB_REQ_HANDLER = 2 };
enum { ID_REQ_ID = 1, ID_REQ_VERBOSE = 2 }; /* every request naming one sandbox or container */
enum { ANSWER_ID = 1 };                     /* RunPodSandbox-, CreateContainer-, Exec-...Response */
enum { CT_META_NAME = 1, CT_META_ATTEMPT = 2 }; /* ContainerMetadata */
enum { MOUNT_CONTAINER_PATH = 1, MOUNT_HOST_PATH = 2, MOUNT_READONLY = 3, MOUNT_PROPAGATION = 5 };
enum { CT_LINUX_RESOURCES = 1, CT_LINUX_SECURITY = 2 }; /* LinuxContainerConfig */
enum {                                                  /* ContainerConfig */
       CTC_METADATA = 1,
       CTC_IMAGE = 2,
       CTC_COMMAND = 3,
       CTC_ARGS = 4,
       CTC_WORKING_DIR = 5,
       CTC_ENVS = 6,
       CTC_MOUNTS = 7,
       CTC_LABELS = 9,
       CTC_ANNOTATIONS = 10,
       CTC_LOG_PATH = 11,
       CTC_STDIN = 12,
       CTC_STDIN_ONCE = 13,
       CTC_TTY = 14,
       CTC_LINUX = 15
};
enum { CREATE_REQ_SANDBOX_ID = 1, CREATE_REQ_CONFIG = 2, CREATE_REQ_SANDBOX_CONFIG = 3 };
enum { STOP_CT_REQ_ID = 1, STOP_CT_REQ_TIMEOUT = 2 };
enum { STATE_VALUE = 1 }; /* PodSandboxStateValue, ContainerStateValue */
enum { SB_FILTER_ID = 1, SB_FILTER_STATE = 2, SB_FILTER_LABELS = 3 };
enum { CT_FILTER_ID = 1, CT_FILTER_STATE = 2, CT_FILTER_SANDBOX = 3, CT_FILTER_LABELS = 4 };
enum { STATS_FILTER_ID = 1, STATS_FILTER_SANDBOX = 2, STATS_FILTER_LABELS = 3 };
enum { LIST_REQ_FILTER = 1 }; /* ListPodSandbox-, ListContainers-, ListContainerStatsRequest */
enum { EXEC_SYNC_REQ_ID = 1, EXEC_SYNC_REQ_CMD = 2, EXEC_SYNC_REQ_TIMEOUT = 3 };
enum { EXEC_REQ_ID = 1, EXEC_REQ_CMD = 2, EXEC_REQ_TTY = 3, EXEC_REQ_STDIN = 4 };
enum { EXEC_REQ_STDOUT = 5, EXEC_REQ_STDERR = 6 };
enum { ATTACH_REQ_ID = 1, ATTACH_REQ_STDIN = 2, ATTACH_REQ_TTY = 3, ATTACH_REQ_STDOUT = 4 };
enum { ATTACH_REQ_STDERR = 5 };
enum { PF_REQ_SANDBOX_ID = 1, PF_REQ_PORT = 2 };
enum { /* PodSandbox */
       SB_ID = 1,
       SB_METADATA = 2,
       SB_STATE = 3,
       SB_CREATED_AT = 4,
       SB_LABELS = 5,
       SB_ANNOTATIONS = 6,
       SB_RUNTIME_HANDLER = 7
};
enum { LIST_SB_ITEMS = 1 }; /* ListPodSandboxResponse */
enum {                      /* PodSandboxStatus */
       SBS_ID = 1,
       SBS_METADATA = 2,
       SBS_STATE = 3,
       SBS_CREATED_AT = 4,
       SBS_NETWORK = 5,
       SBS_LINUX = 6,
       SBS_LABELS = 7,
       SBS_ANNOTATIONS = 8,
       SBS_RUNTIME_HANDLER = 9
};
enum { SB_STATUS_STATUS = 1 };           /* PodSandboxStatusResponse */
enum { NET_IP = 1, NET_ADDITIONAL = 2 }; /* PodSandboxNetworkStatus */
enum { POD_IP_IP = 1 };                  /* PodIP */
enum { SB_LINUX_STATUS_NAMESPACES = 1 }; /* LinuxPodSandboxStatus */
enum { NAMESPACE_OPTIONS = 2 };          /* Namespace */
enum {                                   /* Container */
       CT_ID = 1,
       CT_SANDBOX_ID = 2,
       CT_METADATA = 3,
       CT_IMAGE = 4,
       CT_IMAGE_REF = 5,
       CT_STATE = 6,
       CT_CREATED_AT = 7,
       CT_LABELS = 8,
       CT_ANNOTATIONS = 9,
       CT_IMAGE_ID = 10
};
enum { LIST_CT_CONTAINERS = 1 }; /* ListContainersResponse */
enum {                           /* ContainerStatus */
       CTS_ID = 1,
       CTS_METADATA = 2,
       CTS_STATE = 3,
       CTS_CREATED_AT = 4,
       CTS_STARTED_AT = 5,
       CTS_FINISHED_AT = 6,
       CTS_EXIT_CODE = 7,
       CTS_IMAGE = 8,
       CTS_IMAGE_REF = 9,
       CTS_REASON = 10,
       CTS_MESSAGE = 11,
       CTS_LABELS = 12,
       CTS_ANNOTATIONS = 13,
       CTS_LOG_PATH = 15,
       CTS_IMAGE_ID = 17
};
enum { CT_STATUS_STATUS = 1 }; /* ContainerStatusResponse */
enum { EXEC_SYNC_STDOUT = 1, EXEC_SYNC_STDERR = 2, EXEC_SYNC_EXIT_CODE = 3 };
enum { STATS_ATTRIBUTES = 1, STATS_CPU = 2, STATS_MEMORY = 3 }; /* ContainerStats */
enum { ATTR_ID = 1, ATTR_METADATA = 2, ATTR_LABELS = 3 };       /* ContainerAttributes */
enum { CPU_TIMESTAMP = 1, CPU_USAGE_CORE_NS = 2, CPU_USAGE_NANO_CORES = 3 };
enum { MEM_WORKING_SET = 2, MEM_RSS = 5 }; /* MemoryUsage */
enum { STATS_STATS = 1 };                  /* ContainerStatsResponse, ListContainerStatsResponse */
enum { SB_STATS_FILTER_ID = 1, SB_STATS_FILTER_LABELS = 2 };             /* PodSandboxStatsFilter */
enum { SB_STATS_ATTRIBUTES = 1, SB_STATS_LINUX = 2 };                    /* PodSandboxStats */
enum { SB_ATTR_ID = 1, SB_ATTR_METADATA = 2, SB_ATTR_LABELS = 3 };       /* PodSandboxAttributes */
enum { SB_LINUX_CPU = 1, SB_LINUX_MEMORY = 2, SB_LINUX_CONTAINERS = 5 }; /* LinuxPodSandboxStats */
/* PodSandboxStatsResponse and ListPodSandboxStatsResponse: STATS_STATS */

/* ---- writing ---------------------------------------------------------------------- */

/* A string field, left out when empty as proto3 writes it. */
static void put_string(struct ck__buf *b, uint32_t number, const char *s)
{
    if (s && *s)
        ck__pb_put_bytes(b, number, s, strlen(s));
}

/* An ImageSpec {image} as field number. */
static void put_image_spec(struct ck__buf *b, uint32_t number, const char *image)
{
    size_t at = ck__pb_begin_len(b, number);
    put_string(b, SPEC_IMAGE, image);
    ck__pb_end_len(b, at);
}

void ck__cri_encode_version(struct ck__buf *b, const char *version)
{
    put_string(b, VERSION_REQ_VERSION, version);
}

void ck__cri_encode_status(struct ck__buf *b, bool verbose)
{
    ck__pb_put_uint(b, STATUS_REQ_VERBOSE, verbose);
}

void ck__cri_encode_list_images(struct ck__buf *b, const char *image)
{
    if (!image)
        return;
    size_t at = ck__pb_begin_len(b, LIST_IMAGES_REQ_FILTER);
    put_image_spec(b, FILTER_IMAGE, image);
    ck__pb_end_len(b, at);
}

void ck__cri_encode_image_status(struct ck__buf *b, const char *image, bool verbose)
{
    put_image_spec(b, IMAGE_STATUS_REQ_IMAGE, image);
    ck__pb_put_uint(b, IMAGE_STATUS_REQ_VERBOSE, verbose);
}

void ck__cri_encode_pull_image(struct ck__buf *b, const char *image,
                               const struct ck__cri_auth *auth)
{
    put_image_spec(b, PULL_REQ_IMAGE, image);
    if (!auth)
        return;
    size_t at = ck__pb_begin_len(b, PULL_REQ_AUTH);
    put_string(b, AUTH_USERNAME, auth->username);
    put_string(b, AUTH_PASSWORD, auth->password);
    put_string(b, AUTH_AUTH, auth->auth);
    put_string(b, AUTH_SERVER, auth->server_address);
    put_string(b, AUTH_IDENTITY_TOKEN, auth->identity_token);
    put_string(b, AUTH_REGISTRY_TOKEN, auth->registry_token);
    ck__pb_end_len(b, at);
}

void ck__cri_encode_remove_image(struct ck__buf *b, const char *image)
{
    put_image_spec(b, REMOVE_REQ_IMAGE, image);
}

/* A map<string, string> field: one entry {key, value} per pair, both always written. */
static void put_map(struct ck__buf *b, uint32_t number, const struct ck__cri_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t at = ck__pb_begin_len(b, number);
        const char *k = kv[i].key ? kv[i].key : "", *v = kv[i].value ? kv[i].value : "";
        ck__pb_put_bytes(b, KV_KEY, k, strlen(k));
        ck__pb_put_bytes(b, KV_VALUE, v, strlen(v));
        ck__pb_end_len(b, at);
    }
}

/* A repeated string field. */
static void put_strings(struct ck__buf *b, uint32_t number, const char *const *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck__pb_put_bytes(b, number, s[i] ? s[i] : "", s[i] ? strlen(s[i]) : 0);
}

/* A repeated int64 or int32 field, packed as proto3 writes it; nothing when empty. */
static void put_packed(struct ck__buf *b, uint32_t number, const int64_t *v, size_t n)
{
    if (n == 0)
        return;
    size_t at = ck__pb_begin_len(b, number);
    for (size_t i = 0; i < n; i++)
        ck__pb_put_varint(b, (uint64_t)v[i]);
    ck__pb_end_len(b, at);
}

/* An Int64Value {value} (present even when value is 0). */
static void put_int64_value(struct ck__buf *b, uint32_t number, int64_t v)
{
    size_t at = ck__pb_begin_len(b, number);
    ck__pb_put_uint(b, WRAPPER_VALUE, (uint64_t)v);
    ck__pb_end_len(b, at);
}

static void put_namespaces(struct ck__buf *b, uint32_t number, const struct ck__cri_security *s)
{
    size_t at = ck__pb_begin_len(b, number);
    ck__pb_put_uint(b, NS_NETWORK, (uint64_t)s->network);
    ck__pb_put_uint(b, NS_PID, (uint64_t)s->pid);
    ck__pb_put_uint(b, NS_IPC, (uint64_t)s->ipc);
    ck__pb_end_len(b, at);
}

static void put_seccomp(struct ck__buf *b, uint32_t number, const struct ck__cri_security *s)
{
    if (s->seccomp == CK__CRI_SECCOMP_UNSET)
        return;
    size_t at = ck__pb_begin_len(b, number);
    ck__pb_put_uint(b, PROFILE_TYPE, (uint64_t)s->seccomp);
    if (s->seccomp == CK__CRI_SECCOMP_LOCALHOST)
        put_string(b, PROFILE_LOCALHOST_REF, s->seccomp_localhost_ref);
    ck__pb_end_len(b, at);
}

/* A LinuxSandboxSecurityContext: the fields a sandbox has, in their numbers' order. */
static void put_sandbox_security(struct ck__buf *b, uint32_t number,
                                 const struct ck__cri_security *s)
{
    size_t at = ck__pb_begin_len(b, number);
    put_namespaces(b, SSC_NAMESPACES, s);
    if (s->has_run_as_user)
        put_int64_value(b, SSC_RUN_AS_USER, s->run_as_user);
    ck__pb_put_uint(b, SSC_READONLY_ROOTFS, s->readonly_rootfs);
    put_packed(b, SSC_SUPPLEMENTAL_GROUPS, s->supplemental_groups, s->n_supplemental_groups);
    ck__pb_put_uint(b, SSC_PRIVILEGED, s->privileged);
    if (s->has_run_as_group)
        put_int64_value(b, SSC_RUN_AS_GROUP, s->run_as_group);
    put_seccomp(b, SSC_SECCOMP, s);
    ck__pb_end_len(b, at);
}

/* A LinuxContainerSecurityContext. */
static void put_container_security(struct ck__buf *b, uint32_t number,
                                   const struct ck__cri_security *s)
{
    size_t at = ck__pb_begin_len(b, number);
    if (s->n_add_capabilities || s->n_drop_capabilities) {
        size_t caps = ck__pb_begin_len(b, CSC_CAPABILITIES);
        put_strings(b, CAP_ADD, s->add_capabilities, s->n_add_capabilities);
        put_strings(b, CAP_DROP, s->drop_capabilities, s->n_drop_capabilities);
        ck__pb_end_len(b, caps);
    }
    ck__pb_put_uint(b, CSC_PRIVILEGED, s->privileged);
    put_namespaces(b, CSC_NAMESPACES, s);
    if (s->has_run_as_user)
        put_int64_value(b, CSC_RUN_AS_USER, s->run_as_user);
    put_string(b, CSC_RUN_AS_USERNAME, s->run_as_username);
    ck__pb_put_uint(b, CSC_READONLY_ROOTFS, s->readonly_rootfs);
    put_packed(b, CSC_SUPPLEMENTAL_GROUPS, s->supplemental_groups, s->n_supplemental_groups);
    ck__pb_put_uint(b, CSC_NO_NEW_PRIVS, s->no_new_privs);
    if (s->has_run_as_group)
        put_int64_value(b, CSC_RUN_AS_GROUP, s->run_as_group);
    put_strings(b, CSC_MASKED_PATHS, s->masked_paths, s->n_masked_paths);
    put_strings(b, CSC_READONLY_PATHS, s->readonly_paths, s->n_readonly_paths);
    put_seccomp(b, CSC_SECCOMP, s);
    ck__pb_end_len(b, at);
}

/* A PodSandboxConfig; its linux part (with the security context) always. */
static void put_sandbox_config(struct ck__buf *b, uint32_t number,
                               const struct ck__cri_sandbox_config *c)
{
    size_t at = ck__pb_begin_len(b, number);
    size_t meta = ck__pb_begin_len(b, SBC_METADATA);
    put_string(b, SB_META_NAME, c->name);
    put_string(b, SB_META_UID, c->uid);
    put_string(b, SB_META_NAMESPACE, c->ns);
    ck__pb_put_uint(b, SB_META_ATTEMPT, c->attempt);
    ck__pb_end_len(b, meta);
    put_string(b, SBC_HOSTNAME, c->hostname);
    put_string(b, SBC_LOG_DIRECTORY, c->log_directory);
    if (c->n_dns_servers || c->n_dns_searches || c->n_dns_options) {
        size_t dns = ck__pb_begin_len(b, SBC_DNS);
        put_strings(b, DNS_SERVERS, c->dns_servers, c->n_dns_servers);
        put_strings(b, DNS_SEARCHES, c->dns_searches, c->n_dns_searches);
        put_strings(b, DNS_OPTIONS, c->dns_options, c->n_dns_options);
        ck__pb_end_len(b, dns);
    }
    for (size_t i = 0; i < c->n_port_mappings; i++) {
        const struct ck__cri_port_mapping *p = &c->port_mappings[i];
        size_t port = ck__pb_begin_len(b, SBC_PORT_MAPPINGS);
        ck__pb_put_uint(b, PORT_PROTOCOL, (uint64_t)p->protocol);
        ck__pb_put_uint(b, PORT_CONTAINER, (uint64_t)(int64_t)p->container_port);
        ck__pb_put_uint(b, PORT_HOST, (uint64_t)(int64_t)p->host_port);
        put_string(b, PORT_HOST_IP, p->host_ip);
        ck__pb_end_len(b, port);
    }
    put_map(b, SBC_LABELS, c->labels, c->n_labels);
    put_map(b, SBC_ANNOTATIONS, c->annotations, c->n_annotations);
    size_t lx = ck__pb_begin_len(b, SBC_LINUX);
    put_string(b, SB_LINUX_CGROUP_PARENT, c->cgroup_parent);
    put_sandbox_security(b, SB_LINUX_SECURITY, &c->security);
    put_map(b, SB_LINUX_SYSCTLS, c->sysctls, c->n_sysctls);
    ck__pb_end_len(b, lx);
    ck__pb_end_len(b, at);
}

void ck__cri_encode_run_sandbox(struct ck__buf *b, const struct ck__cri_sandbox_config *config,
                                const char *runtime_handler)
{
    put_sandbox_config(b, RUN_SB_REQ_CONFIG, config);
    put_string(b, RUN_SB_REQ_HANDLER, runtime_handler);
}

static void put_resources(struct ck__buf *b, uint32_t number, const struct ck__cri_resources *r)
{
    size_t at = ck__pb_begin_len(b, number);
    ck__pb_put_uint(b, RES_CPU_PERIOD, (uint64_t)r->cpu_period);
    ck__pb_put_uint(b, RES_CPU_QUOTA, (uint64_t)r->cpu_quota);
    ck__pb_put_uint(b, RES_CPU_SHARES, (uint64_t)r->cpu_shares);
    ck__pb_put_uint(b, RES_MEMORY_LIMIT, (uint64_t)r->memory_limit_in_bytes);
    ck__pb_put_uint(b, RES_OOM_SCORE_ADJ, (uint64_t)r->oom_score_adj);
    ck__pb_put_uint(b, RES_MEMORY_SWAP_LIMIT, (uint64_t)r->memory_swap_limit_in_bytes);
    ck__pb_end_len(b, at);
}

void ck__cri_encode_create_container(struct ck__buf *b, const char *sandbox_id,
                                     const struct ck__cri_container_config *c,
                                     const struct ck__cri_sandbox_config *sandbox_config)
{
    put_string(b, CREATE_REQ_SANDBOX_ID, sandbox_id);
    size_t at = ck__pb_begin_len(b, CREATE_REQ_CONFIG);
    size_t meta = ck__pb_begin_len(b, CTC_METADATA);
    put_string(b, CT_META_NAME, c->name);
    ck__pb_put_uint(b, CT_META_ATTEMPT, c->attempt);
    ck__pb_end_len(b, meta);
    put_image_spec(b, CTC_IMAGE, c->image);
    put_strings(b, CTC_COMMAND, c->command, c->n_command);
    put_strings(b, CTC_ARGS, c->args, c->n_args);
    put_string(b, CTC_WORKING_DIR, c->working_dir);
    for (size_t i = 0; i < c->n_envs; i++) { /* KeyValue: an empty value is left out */
        size_t env = ck__pb_begin_len(b, CTC_ENVS);
        put_string(b, KV_KEY, c->envs[i].key);
        put_string(b, KV_VALUE, c->envs[i].value);
        ck__pb_end_len(b, env);
    }
    for (size_t i = 0; i < c->n_mounts; i++) {
        const struct ck__cri_mount *m = &c->mounts[i];
        size_t mount = ck__pb_begin_len(b, CTC_MOUNTS);
        put_string(b, MOUNT_CONTAINER_PATH, m->container_path);
        put_string(b, MOUNT_HOST_PATH, m->host_path);
        ck__pb_put_uint(b, MOUNT_READONLY, m->readonly);
        ck__pb_put_uint(b, MOUNT_PROPAGATION, (uint64_t)m->propagation);
        ck__pb_end_len(b, mount);
    }
    put_map(b, CTC_LABELS, c->labels, c->n_labels);
    put_map(b, CTC_ANNOTATIONS, c->annotations, c->n_annotations);
    put_string(b, CTC_LOG_PATH, c->log_path);
    ck__pb_put_uint(b, CTC_STDIN, c->open_stdin);
    ck__pb_put_uint(b, CTC_STDIN_ONCE, c->stdin_once);
    ck__pb_put_uint(b, CTC_TTY, c->tty);
    size_t lx = ck__pb_begin_len(b, CTC_LINUX);
    if (c->has_resources)
        put_resources(b, CT_LINUX_RESOURCES, &c->resources);
    put_container_security(b, CT_LINUX_SECURITY, &c->security);
    ck__pb_end_len(b, lx);
    ck__pb_end_len(b, at);
    if (sandbox_config)
        put_sandbox_config(b, CREATE_REQ_SANDBOX_CONFIG, sandbox_config);
}

/* A filter's state as a {Pod,Container}StateValue, present even for state 0. */
static void put_state_value(struct ck__buf *b, uint32_t number, int state)
{
    if (state < 0)
        return;
    size_t at = ck__pb_begin_len(b, number);
    ck__pb_put_uint(b, STATE_VALUE, (uint64_t)state);
    ck__pb_end_len(b, at);
}

void ck__cri_encode_list_sandboxes(struct ck__buf *b, const struct ck__cri_filter *f)
{
    if (!f)
        return;
    size_t at = ck__pb_begin_len(b, LIST_REQ_FILTER);
    put_string(b, SB_FILTER_ID, f->id);
    put_state_value(b, SB_FILTER_STATE, f->state);
    put_map(b, SB_FILTER_LABELS, f->labels, f->n_labels);
    ck__pb_end_len(b, at);
}

void ck__cri_encode_list_containers(struct ck__buf *b, const struct ck__cri_filter *f)
{
    if (!f)
        return;
    size_t at = ck__pb_begin_len(b, LIST_REQ_FILTER);
    put_string(b, CT_FILTER_ID, f->id);
    put_state_value(b, CT_FILTER_STATE, f->state);
    put_string(b, CT_FILTER_SANDBOX, f->sandbox_id);
    put_map(b, CT_FILTER_LABELS, f->labels, f->n_labels);
    ck__pb_end_len(b, at);
}

void ck__cri_encode_list_container_stats(struct ck__buf *b, const struct ck__cri_filter *f)
{
    if (!f)
        return;
    size_t at = ck__pb_begin_len(b, LIST_REQ_FILTER); /* ContainerStatsFilter has no state */
    put_string(b, STATS_FILTER_ID, f->id);
    put_string(b, STATS_FILTER_SANDBOX, f->sandbox_id);
    put_map(b, STATS_FILTER_LABELS, f->labels, f->n_labels);
    ck__pb_end_len(b, at);
}

void ck__cri_encode_list_sandbox_stats(struct ck__buf *b, const struct ck__cri_filter *f)
{
    if (!f)
        return;
    size_t at = ck__pb_begin_len(b, LIST_REQ_FILTER); /* PodSandboxStatsFilter: no state */
    put_string(b, SB_STATS_FILTER_ID, f->id);
    put_map(b, SB_STATS_FILTER_LABELS, f->labels, f->n_labels);
    ck__pb_end_len(b, at);
}

void ck__cri_encode_stop_container(struct ck__buf *b, const char *id, int64_t timeout_s)
{
    put_string(b, STOP_CT_REQ_ID, id);
    ck__pb_put_uint(b, STOP_CT_REQ_TIMEOUT, (uint64_t)timeout_s);
}

void ck__cri_encode_exec_sync(struct ck__buf *b, const char *id, const char *const *argv,
                              size_t argc, int64_t timeout_s)
{
    put_string(b, EXEC_SYNC_REQ_ID, id);
    put_strings(b, EXEC_SYNC_REQ_CMD, argv, argc);
    ck__pb_put_uint(b, EXEC_SYNC_REQ_TIMEOUT, (uint64_t)timeout_s);
}

void ck__cri_encode_exec(struct ck__buf *b, const char *id, const char *const *argv, size_t argc,
                         struct ck__cri_streams s)
{
    put_string(b, EXEC_REQ_ID, id);
    put_strings(b, EXEC_REQ_CMD, argv, argc);
    ck__pb_put_uint(b, EXEC_REQ_TTY, s.tty);
    ck__pb_put_uint(b, EXEC_REQ_STDIN, s.want_stdin);
    ck__pb_put_uint(b, EXEC_REQ_STDOUT, s.want_stdout);
    ck__pb_put_uint(b, EXEC_REQ_STDERR, s.want_stderr);
}

void ck__cri_encode_attach(struct ck__buf *b, const char *id, struct ck__cri_streams s)
{
    put_string(b, ATTACH_REQ_ID, id);
    ck__pb_put_uint(b, ATTACH_REQ_STDIN, s.want_stdin);
    ck__pb_put_uint(b, ATTACH_REQ_TTY, s.tty);
    ck__pb_put_uint(b, ATTACH_REQ_STDOUT, s.want_stdout);
    ck__pb_put_uint(b, ATTACH_REQ_STDERR, s.want_stderr);
}

void ck__cri_encode_port_forward(struct ck__buf *b, const char *sandbox_id, const int32_t *ports,
                                 size_t n_ports)
{
    put_string(b, PF_REQ_SANDBOX_ID, sandbox_id);
    if (n_ports == 0)
        return;
    size_t at = ck__pb_begin_len(b, PF_REQ_PORT);
    for (size_t i = 0; i < n_ports; i++)
        ck__pb_put_varint(b, (uint64_t)(int64_t)ports[i]);
    ck__pb_end_len(b, at);
}

/* ---- reading ---------------------------------------------------------------------- */

/* A length-delimited field's content, or false. */
static bool sub(struct ck__pb_reader *r, unsigned wire, struct ck__pb_reader *ret)
{
    return wire == CK__PB_LEN && ck__pb_get_len(r, ret);
}

static bool varint(struct ck__pb_reader *r, unsigned wire, uint64_t *ret)
{
    return wire == CK__PB_VARINT && ck__pb_get_varint(r, ret);
}

/*
 * A string field into *dst (a later occurrence replaces an earlier one, as
 * protobuf says). CK_EIO when malformed or holding a NUL, CK_ENOMEM.
 */
static int string(struct ck__pb_reader *r, unsigned wire, char **dst)
{
    struct ck__pb_reader s;
    if (!sub(r, wire, &s))
        return CK_EIO;
    size_t n = (size_t)(s.end - s.p);
    if (memchr(s.p, '\0', n))
        return CK_EIO;
    char *copy = ck__malloc(n + 1);
    if (!copy)
        return CK_ENOMEM;
    memcpy(copy, s.p, n);
    copy[n] = '\0';
    free(*dst);
    *dst = copy;
    return 0;
}

/* Appends one element to an array of size elements; its new slot, zeroed, or NULL. */
static void *grow(void **items, size_t *n, size_t size)
{
    void *p = ck__realloc(*items, (*n + 1) * size);
    if (!p)
        return NULL;
    *items = p;
    memset((char *)p + *n * size, 0, size);
    return (char *)p + (*n)++ * size;
}

/* A repeated string field: one more element. */
static int repeated_string(struct ck__pb_reader *r, unsigned wire, char ***items, size_t *n)
{
    char **slot = grow((void **)items, n, sizeof(char *));
    if (!slot)
        return CK_ENOMEM;
    int e = string(r, wire, slot);
    if (e < 0)
        (*n)--; /* the slot holds nothing */
    return e;
}

/* Skips a field this client does not read. */
static int skip(struct ck__pb_reader *r, unsigned wire)
{
    return ck__pb_skip(r, wire) ? 0 : CK_EIO;
}

/*
 * Reads one field (number no, wire type wire) of a message into ctx, or skips
 * it: 0, CK_EIO when malformed, CK_ENOMEM.
 */
typedef int field_fn(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire);

/* Every field of the message in r, through field(); CK_EIO when r is cut. */
static int each_field(struct ck__pb_reader r, field_fn *field, void *ctx)
{
    uint32_t no;
    unsigned wire;
    int more, e = 0;
    while (e == 0 && (more = ck__pb_next(&r, &no, &wire)) == 1)
        e = field(ctx, &r, no, wire);
    return e < 0 ? e : more < 0 ? CK_EIO : 0;
}

/* A message field read into ctx by field(). */
static int message(struct ck__pb_reader *r, unsigned wire, field_fn *field, void *ctx)
{
    struct ck__pb_reader m;
    return sub(r, wire, &m) ? each_field(m, field, ctx) : CK_EIO;
}

/* A repeated message field: one more element of size bytes, read by field(). */
static int repeated_message(struct ck__pb_reader *r, unsigned wire, void **items, size_t *n,
                            size_t size, field_fn *field)
{
    struct ck__pb_reader m;
    if (!sub(r, wire, &m))
        return CK_EIO;
    void *item = grow(items, n, size);
    return item ? each_field(m, field, item) : CK_ENOMEM;
}

static int wrapper_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    return no != WRAPPER_VALUE ? skip(r, wire) : varint(r, wire, ctx) ? 0 : CK_EIO;
}

/* The value of an Int64Value or UInt64Value field (0 when it has none). */
static int wrapper(struct ck__pb_reader *r, unsigned wire, uint64_t *ret)
{
    *ret = 0;
    return message(r, wire, wrapper_field, ret);
}

/* A bool field. */
static int boolean(struct ck__pb_reader *r, unsigned wire, bool *ret)
{
    uint64_t v;
    if (!varint(r, wire, &v))
        return CK_EIO;
    *ret = v != 0;
    return 0;
}

static int version_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_version *v = ctx;
    switch (no) {
    case VERSION_VERSION:
        return string(r, wire, &v->version);
    case VERSION_NAME:
        return string(r, wire, &v->runtime_name);
    case VERSION_RT_VERSION:
        return string(r, wire, &v->runtime_version);
    case VERSION_API_VERSION:
        return string(r, wire, &v->runtime_api_version);
    default:
        return skip(r, wire);
    }
}

int ck__cri_decode_version(struct ck__pb_reader r, struct ck__cri_version *ret)
{
    struct ck__cri_version v = {0};
    int e = each_field(r, version_field, &v);
    if (e < 0)
        ck__cri_version_release(&v);
    else
        *ret = v;
    return e;
}

void ck__cri_version_release(struct ck__cri_version *v)
{
    free(v->version);
    free(v->runtime_name);
    free(v->runtime_version);
    free(v->runtime_api_version);
    *v = (struct ck__cri_version){0};
}

static int condition_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_condition *c = ctx;
    switch (no) {
    case COND_TYPE:
        return string(r, wire, &c->type);
    case COND_STATUS:
        return boolean(r, wire, &c->status);
    case COND_REASON:
        return string(r, wire, &c->reason);
    case COND_MESSAGE:
        return string(r, wire, &c->message);
    default:
        return skip(r, wire);
    }
}

/* A RuntimeStatus's field: its conditions are appended to the status. */
static int runtime_status_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_status *s = ctx;
    if (no != RUNTIME_STATUS_CONDITIONS)
        return skip(r, wire);
    return repeated_message(r, wire, (void **)&s->conditions, &s->n_conditions,
                            sizeof(*s->conditions), condition_field);
}

static int map_entry(struct ck__pb_reader *r, unsigned wire, struct ck__cri_kv **kv, size_t *n);
static void kvs_release(struct ck__cri_kv *kv, size_t n);

static int status_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_status *s = ctx;
    if (no == STATUS_STATUS)
        return message(r, wire, runtime_status_field, ctx);
    if (no == STATUS_INFO)
        return map_entry(r, wire, &s->info, &s->n_info);
    return skip(r, wire); /* runtime handlers, features */
}

int ck__cri_decode_status(struct ck__pb_reader r, struct ck__cri_status *ret)
{
    struct ck__cri_status s = {0};
    int e = each_field(r, status_field, &s);
    if (e < 0)
        ck__cri_status_release(&s);
    else
        *ret = s;
    return e;
}

void ck__cri_status_release(struct ck__cri_status *s)
{
    for (size_t i = 0; i < s->n_conditions; i++) {
        free(s->conditions[i].type);
        free(s->conditions[i].reason);
        free(s->conditions[i].message);
    }
    free(s->conditions);
    kvs_release(s->info, s->n_info);
    *s = (struct ck__cri_status){0};
}

const struct ck__cri_condition *ck__cri_status_condition(const struct ck__cri_status *s,
                                                         const char *type)
{
    for (size_t i = 0; i < s->n_conditions; i++)
        if (s->conditions[i].type && strcmp(s->conditions[i].type, type) == 0)
            return &s->conditions[i];
    return NULL;
}

/* An Image's field (the image zeroed by the caller, released by it on failure too). */
static int image_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_image *img = ctx;
    uint64_t v;
    int e;
    switch (no) {
    case IMAGE_ID:
        return string(r, wire, &img->id);
    case IMAGE_REPO_TAGS:
        return repeated_string(r, wire, &img->repo_tags, &img->n_repo_tags);
    case IMAGE_REPO_DIGESTS:
        return repeated_string(r, wire, &img->repo_digests, &img->n_repo_digests);
    case IMAGE_SIZE:
        return varint(r, wire, &img->size) ? 0 : CK_EIO;
    case IMAGE_UID:
        e = wrapper(r, wire, &v);
        img->has_uid = e == 0;
        img->uid = (int64_t)v;
        return e;
    case IMAGE_USERNAME:
        return string(r, wire, &img->username);
    case IMAGE_PINNED:
        return boolean(r, wire, &img->pinned);
    default:
        return skip(r, wire); /* spec */
    }
}

void ck__cri_image_release(struct ck__cri_image *img)
{
    free(img->id);
    for (size_t i = 0; i < img->n_repo_tags; i++)
        free(img->repo_tags[i]);
    free(img->repo_tags);
    for (size_t i = 0; i < img->n_repo_digests; i++)
        free(img->repo_digests[i]);
    free(img->repo_digests);
    free(img->username);
    *img = (struct ck__cri_image){0};
}

static int list_images_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_images *l = ctx;
    if (no != LIST_IMAGES_IMAGES)
        return skip(r, wire);
    return repeated_message(r, wire, (void **)&l->items, &l->n, sizeof(*l->items), image_field);
}

int ck__cri_decode_list_images(struct ck__pb_reader r, struct ck__cri_images *ret)
{
    struct ck__cri_images l = {0};
    int e = each_field(r, list_images_field, &l);
    if (e < 0)
        ck__cri_images_release(&l);
    else
        *ret = l;
    return e;
}

void ck__cri_images_release(struct ck__cri_images *l)
{
    for (size_t i = 0; i < l->n; i++)
        ck__cri_image_release(&l->items[i]);
    free(l->items);
    *l = (struct ck__cri_images){0};
}

struct image_status {
    struct ck__cri_image image;
    bool found;
};

static int image_status_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct image_status *st = ctx;
    if (no != IMAGE_STATUS_IMAGE)
        return skip(r, wire); /* info (verbose) */
    st->found = true;         /* a repeated message field merges; the runtime sends one */
    return message(r, wire, image_field, &st->image);
}

int ck__cri_decode_image_status(struct ck__pb_reader r, struct ck__cri_image *ret, bool *ret_found)
{
    struct image_status st = {0};
    int e = each_field(r, image_status_field, &st);
    if (e < 0) {
        ck__cri_image_release(&st.image);
        return e;
    }
    *ret = st.image;
    *ret_found = st.found;
    return 0;
}

static int pull_image_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    return no == PULL_IMAGE_REF ? string(r, wire, ctx) : skip(r, wire);
}

int ck__cri_decode_pull_image(struct ck__pb_reader r, char **ret_ref)
{
    char *ref = NULL;
    int e = each_field(r, pull_image_field, &ref);
    if (e < 0)
        free(ref);
    else
        *ret_ref = ref;
    return e;
}

static int fs_id_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    return no == FS_ID_MOUNTPOINT ? string(r, wire, ctx) : skip(r, wire);
}

static int fs_usage_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_fs_usage *u = ctx;
    uint64_t v;
    int e;
    switch (no) {
    case FS_TIMESTAMP:
        e = varint(r, wire, &v) ? 0 : CK_EIO;
        u->timestamp = (int64_t)v;
        return e;
    case FS_ID:
        return message(r, wire, fs_id_field, &u->mountpoint);
    case FS_USED_BYTES:
        e = wrapper(r, wire, &u->used_bytes);
        u->has_used_bytes = e == 0;
        return e;
    case FS_INODES_USED:
        e = wrapper(r, wire, &u->inodes_used);
        u->has_inodes_used = e == 0;
        return e;
    default:
        return skip(r, wire);
    }
}

static int fs_info_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_fs_info *f = ctx;
    if (no == FSINFO_IMAGE_FS)
        return repeated_message(r, wire, (void **)&f->image_fs, &f->n_image_fs,
                                sizeof(*f->image_fs), fs_usage_field);
    if (no == FSINFO_CONTAINER_FS)
        return repeated_message(r, wire, (void **)&f->container_fs, &f->n_container_fs,
                                sizeof(*f->container_fs), fs_usage_field);
    return skip(r, wire);
}

int ck__cri_decode_fs_info(struct ck__pb_reader r, struct ck__cri_fs_info *ret)
{
    struct ck__cri_fs_info f = {0};
    int e = each_field(r, fs_info_field, &f);
    if (e < 0)
        ck__cri_fs_info_release(&f);
    else
        *ret = f;
    return e;
}

void ck__cri_fs_info_release(struct ck__cri_fs_info *f)
{
    for (size_t i = 0; i < f->n_image_fs; i++)
        free(f->image_fs[i].mountpoint);
    for (size_t i = 0; i < f->n_container_fs; i++)
        free(f->container_fs[i].mountpoint);
    free(f->image_fs);
    free(f->container_fs);
    *f = (struct ck__cri_fs_info){0};
}

/* ---- RuntimeService answers ---- */

/* An int64 (or enum, int32) varint field; int32's negative values come as ten bytes. */
static int int64_field(struct ck__pb_reader *r, unsigned wire, int64_t *ret)
{
    uint64_t v;
    if (!varint(r, wire, &v))
        return CK_EIO;
    *ret = (int64_t)v;
    return 0;
}

static int int32_field(struct ck__pb_reader *r, unsigned wire, int32_t *ret)
{
    int64_t v;
    int e = int64_field(r, wire, &v);
    if (e == 0)
        *ret = (int32_t)v;
    return e;
}

static int uint32_field(struct ck__pb_reader *r, unsigned wire, uint32_t *ret)
{
    uint64_t v;
    if (!varint(r, wire, &v))
        return CK_EIO;
    *ret = (uint32_t)v;
    return 0;
}

/* A bytes field, NUL-terminated, NULs and all; *len without the NUL. */
static int bytes(struct ck__pb_reader *r, unsigned wire, char **dst, size_t *len)
{
    struct ck__pb_reader s;
    if (!sub(r, wire, &s))
        return CK_EIO;
    size_t n = (size_t)(s.end - s.p);
    char *copy = ck__malloc(n + 1);
    if (!copy)
        return CK_ENOMEM;
    memcpy(copy, s.p, n);
    copy[n] = '\0';
    free(*dst);
    *dst = copy;
    *len = n;
    return 0;
}

static int kv_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_kv *kv = ctx;
    if (no == KV_KEY)
        return string(r, wire, &kv->key);
    if (no == KV_VALUE)
        return string(r, wire, &kv->value);
    return skip(r, wire);
}

static void kvs_release(struct ck__cri_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(kv[i].key);
        free(kv[i].value);
    }
    free(kv);
}

/*
 * One entry of a map<string, string> field, appended: a key or value the entry
 * leaves out is "" (protobuf's default), so both are always strings.
 */
static int map_entry(struct ck__pb_reader *r, unsigned wire, struct ck__cri_kv **kv, size_t *n)
{
    int e = repeated_message(r, wire, (void **)kv, n, sizeof(**kv), kv_field);
    if (e < 0 || *n == 0)
        return e;
    struct ck__cri_kv *last = &(*kv)[*n - 1];
    if (!last->key)
        last->key = ck__strdup("");
    if (!last->value)
        last->value = ck__strdup("");
    return last->key && last->value ? 0 : CK_ENOMEM;
}

const char *ck__cri_kv_get(const struct ck__cri_kv *kv, size_t n, const char *key)
{
    for (size_t i = n; i-- > 0;) /* a map's key given twice: the last one counts */
        if (kv[i].key && strcmp(kv[i].key, key) == 0)
            return kv[i].value;
    return NULL;
}

/* PodSandboxMetadata, into a sandbox. */
static int sandbox_meta_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_sandbox *sb = ctx;
    switch (no) {
    case SB_META_NAME:
        return string(r, wire, &sb->name);
    case SB_META_UID:
        return string(r, wire, &sb->uid);
    case SB_META_NAMESPACE:
        return string(r, wire, &sb->ns);
    case SB_META_ATTEMPT:
        return uint32_field(r, wire, &sb->attempt);
    default:
        return skip(r, wire);
    }
}

static int sandbox_state(struct ck__pb_reader *r, unsigned wire, enum ck__cri_sandbox_state *ret)
{
    int64_t v;
    int e = int64_field(r, wire, &v);
    if (e == 0)
        *ret = v == CK__CRI_SANDBOX_READY ? CK__CRI_SANDBOX_READY : CK__CRI_SANDBOX_NOTREADY;
    return e;
}

/* A PodSandbox (ListPodSandbox). */
static int sandbox_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_sandbox *sb = ctx;
    switch (no) {
    case SB_ID:
        return string(r, wire, &sb->id);
    case SB_METADATA:
        return message(r, wire, sandbox_meta_field, sb);
    case SB_STATE:
        return sandbox_state(r, wire, &sb->state);
    case SB_CREATED_AT:
        return int64_field(r, wire, &sb->created_at);
    case SB_LABELS:
        return map_entry(r, wire, &sb->labels, &sb->n_labels);
    case SB_ANNOTATIONS:
        return map_entry(r, wire, &sb->annotations, &sb->n_annotations);
    case SB_RUNTIME_HANDLER:
        return string(r, wire, &sb->runtime_handler);
    default:
        return skip(r, wire);
    }
}

void ck__cri_sandbox_release(struct ck__cri_sandbox *sb)
{
    free(sb->id);
    free(sb->name);
    free(sb->uid);
    free(sb->ns);
    kvs_release(sb->labels, sb->n_labels);
    kvs_release(sb->annotations, sb->n_annotations);
    free(sb->runtime_handler);
    *sb = (struct ck__cri_sandbox){0};
}

static int list_sandboxes_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_sandboxes *l = ctx;
    if (no != LIST_SB_ITEMS)
        return skip(r, wire);
    return repeated_message(r, wire, (void **)&l->items, &l->n, sizeof(*l->items), sandbox_field);
}

int ck__cri_decode_list_sandboxes(struct ck__pb_reader r, struct ck__cri_sandboxes *ret)
{
    struct ck__cri_sandboxes l = {0};
    int e = each_field(r, list_sandboxes_field, &l);
    if (e < 0)
        ck__cri_sandboxes_release(&l);
    else
        *ret = l;
    return e;
}

void ck__cri_sandboxes_release(struct ck__cri_sandboxes *l)
{
    for (size_t i = 0; i < l->n; i++)
        ck__cri_sandbox_release(&l->items[i]);
    free(l->items);
    *l = (struct ck__cri_sandboxes){0};
}

static int pod_ip_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    return no == POD_IP_IP ? string(r, wire, ctx) : skip(r, wire);
}

static int network_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_sandbox_status *st = ctx;
    if (no == NET_IP)
        return string(r, wire, &st->ip);
    if (no != NET_ADDITIONAL)
        return skip(r, wire);
    return repeated_message(r, wire, (void **)&st->additional_ips, &st->n_additional_ips,
                            sizeof(*st->additional_ips), pod_ip_field);
}

static int ns_mode(struct ck__pb_reader *r, unsigned wire, enum ck__cri_ns_mode *ret)
{
    int64_t v;
    int e = int64_field(r, wire, &v);
    if (e == 0)
        *ret = (enum ck__cri_ns_mode)(int)v; /* TARGET (3) and later ones as they come */
    return e;
}

static int ns_option_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_sandbox_status *st = ctx;
    switch (no) {
    case NS_NETWORK:
        return ns_mode(r, wire, &st->network);
    case NS_PID:
        return ns_mode(r, wire, &st->pid);
    case NS_IPC:
        return ns_mode(r, wire, &st->ipc);
    default:
        return skip(r, wire);
    }
}

static int namespace_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    return no == NAMESPACE_OPTIONS ? message(r, wire, ns_option_field, ctx) : skip(r, wire);
}

static int sandbox_linux_status_field(void *ctx, struct ck__pb_reader *r, uint32_t no,
                                      unsigned wire)
{
    if (no == SB_LINUX_STATUS_NAMESPACES)
        return message(r, wire, namespace_field, ctx);
    return skip(r, wire);
}

/* A PodSandboxStatus. */
static int sandbox_status_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_sandbox_status *st = ctx;
    struct ck__cri_sandbox *sb = &st->sandbox;
    switch (no) {
    case SBS_ID:
        return string(r, wire, &sb->id);
    case SBS_METADATA:
        return message(r, wire, sandbox_meta_field, sb);
    case SBS_STATE:
        return sandbox_state(r, wire, &sb->state);
    case SBS_CREATED_AT:
        return int64_field(r, wire, &sb->created_at);
    case SBS_NETWORK:
        return message(r, wire, network_field, st);
    case SBS_LINUX:
        return message(r, wire, sandbox_linux_status_field, st);
    case SBS_LABELS:
        return map_entry(r, wire, &sb->labels, &sb->n_labels);
    case SBS_ANNOTATIONS:
        return map_entry(r, wire, &sb->annotations, &sb->n_annotations);
    case SBS_RUNTIME_HANDLER:
        return string(r, wire, &sb->runtime_handler);
    default:
        return skip(r, wire);
    }
}

struct sandbox_status_answer {
    struct ck__cri_sandbox_status status;
    bool found;
};

static int sandbox_status_answer_field(void *ctx, struct ck__pb_reader *r, uint32_t no,
                                       unsigned wire)
{
    struct sandbox_status_answer *a = ctx;
    if (no != SB_STATUS_STATUS)
        return skip(r, wire); /* info (verbose), container statuses, timestamp */
    a->found = true;
    return message(r, wire, sandbox_status_field, &a->status);
}

static bool filled(const char *s)
{
    return s && *s;
}

int ck__cri_decode_sandbox_status(struct ck__pb_reader r, struct ck__cri_sandbox_status *ret)
{
    struct sandbox_status_answer a = {0};
    int e = each_field(r, sandbox_status_answer_field, &a);
    const struct ck__cri_sandbox *sb = &a.status.sandbox;
    if (e == 0 && (!a.found || !filled(sb->id) || !filled(sb->name) || !filled(sb->ns) ||
                   !filled(sb->uid) || sb->created_at == 0))
        e = CK_EIO; /* what kubelet's verifySandboxStatus requires */
    if (e == 0 && a.status.ip && !*a.status.ip) {
        free(a.status.ip); /* the network's ip present but empty: none */
        a.status.ip = NULL;
    }
    if (e < 0)
        ck__cri_sandbox_status_release(&a.status);
    else
        *ret = a.status;
    return e;
}

void ck__cri_sandbox_status_release(struct ck__cri_sandbox_status *st)
{
    ck__cri_sandbox_release(&st->sandbox);
    free(st->ip);
    for (size_t i = 0; i < st->n_additional_ips; i++)
        free(st->additional_ips[i]);
    free(st->additional_ips);
    *st = (struct ck__cri_sandbox_status){0};
}

static int container_state(struct ck__pb_reader *r, unsigned wire,
                           enum ck__cri_container_state *ret)
{
    int64_t v;
    int e = int64_field(r, wire, &v);
    if (e == 0)
        *ret = v >= CK__CRI_CREATED && v <= CK__CRI_UNKNOWN ? (enum ck__cri_container_state)v
                                                            : CK__CRI_UNKNOWN;
    return e;
}

/* ContainerMetadata's name and attempt, into the two pointed at. */
struct ct_meta {
    char **name;
    uint32_t *attempt;
};

static int ct_meta_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ct_meta *m = ctx;
    if (no == CT_META_NAME)
        return string(r, wire, m->name);
    if (no == CT_META_ATTEMPT)
        return m->attempt ? uint32_field(r, wire, m->attempt) : skip(r, wire);
    return skip(r, wire);
}

static int ct_meta(struct ck__pb_reader *r, unsigned wire, char **name, uint32_t *attempt)
{
    struct ct_meta m = {name, attempt};
    return message(r, wire, ct_meta_field, &m);
}

static int image_spec_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    return no == SPEC_IMAGE ? string(r, wire, ctx) : skip(r, wire);
}

/* A Container (ListContainers). */
static int container_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_container *ct = ctx;
    switch (no) {
    case CT_ID:
        return string(r, wire, &ct->id);
    case CT_SANDBOX_ID:
        return string(r, wire, &ct->sandbox_id);
    case CT_METADATA:
        return ct_meta(r, wire, &ct->name, &ct->attempt);
    case CT_IMAGE:
        return message(r, wire, image_spec_field, &ct->image);
    case CT_IMAGE_REF:
        return string(r, wire, &ct->image_ref);
    case CT_STATE:
        return container_state(r, wire, &ct->state);
    case CT_CREATED_AT:
        return int64_field(r, wire, &ct->created_at);
    case CT_LABELS:
        return map_entry(r, wire, &ct->labels, &ct->n_labels);
    case CT_ANNOTATIONS:
        return map_entry(r, wire, &ct->annotations, &ct->n_annotations);
    case CT_IMAGE_ID:
        return string(r, wire, &ct->image_id);
    default:
        return skip(r, wire);
    }
}

void ck__cri_container_release(struct ck__cri_container *ct)
{
    free(ct->id);
    free(ct->sandbox_id);
    free(ct->name);
    free(ct->image);
    free(ct->image_ref);
    free(ct->image_id);
    kvs_release(ct->labels, ct->n_labels);
    kvs_release(ct->annotations, ct->n_annotations);
    *ct = (struct ck__cri_container){0};
}

static int list_containers_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_containers *l = ctx;
    if (no != LIST_CT_CONTAINERS)
        return skip(r, wire);
    return repeated_message(r, wire, (void **)&l->items, &l->n, sizeof(*l->items), container_field);
}

int ck__cri_decode_list_containers(struct ck__pb_reader r, struct ck__cri_containers *ret)
{
    struct ck__cri_containers l = {0};
    int e = each_field(r, list_containers_field, &l);
    if (e < 0)
        ck__cri_containers_release(&l);
    else
        *ret = l;
    return e;
}

void ck__cri_containers_release(struct ck__cri_containers *l)
{
    for (size_t i = 0; i < l->n; i++)
        ck__cri_container_release(&l->items[i]);
    free(l->items);
    *l = (struct ck__cri_containers){0};
}

/* A ContainerStatus. */
static int container_status_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_container_status *st = ctx;
    switch (no) {
    case CTS_ID:
        return string(r, wire, &st->id);
    case CTS_METADATA:
        return ct_meta(r, wire, &st->name, &st->attempt);
    case CTS_STATE:
        return container_state(r, wire, &st->state);
    case CTS_CREATED_AT:
        return int64_field(r, wire, &st->created_at);
    case CTS_STARTED_AT:
        return int64_field(r, wire, &st->started_at);
    case CTS_FINISHED_AT:
        return int64_field(r, wire, &st->finished_at);
    case CTS_EXIT_CODE:
        return int32_field(r, wire, &st->exit_code);
    case CTS_IMAGE:
        return message(r, wire, image_spec_field, &st->image);
    case CTS_IMAGE_REF:
        return string(r, wire, &st->image_ref);
    case CTS_REASON:
        return string(r, wire, &st->reason);
    case CTS_MESSAGE:
        return string(r, wire, &st->message);
    case CTS_LABELS:
        return map_entry(r, wire, &st->labels, &st->n_labels);
    case CTS_ANNOTATIONS:
        return map_entry(r, wire, &st->annotations, &st->n_annotations);
    case CTS_LOG_PATH:
        return string(r, wire, &st->log_path);
    case CTS_IMAGE_ID:
        return string(r, wire, &st->image_id);
    default:
        return skip(r, wire); /* mounts, resources, user */
    }
}

struct container_status_answer {
    struct ck__cri_container_status status;
    bool found;
};

static int container_status_answer_field(void *ctx, struct ck__pb_reader *r, uint32_t no,
                                         unsigned wire)
{
    struct container_status_answer *a = ctx;
    if (no != CT_STATUS_STATUS)
        return skip(r, wire); /* info (verbose) */
    a->found = true;
    return message(r, wire, container_status_field, &a->status);
}

int ck__cri_decode_container_status(struct ck__pb_reader r, struct ck__cri_container_status *ret)
{
    struct container_status_answer a = {0};
    int e = each_field(r, container_status_answer_field, &a);
    const struct ck__cri_container_status *st = &a.status;
    if (e == 0 && (!a.found || !filled(st->id) || !filled(st->name) || st->created_at == 0 ||
                   !filled(st->image) || !filled(st->image_ref)))
        e = CK_EIO; /* what kubelet's verifyContainerStatus requires */
    if (e < 0)
        ck__cri_container_status_release(&a.status);
    else
        *ret = a.status;
    return e;
}

void ck__cri_container_status_release(struct ck__cri_container_status *st)
{
    free(st->id);
    free(st->name);
    free(st->image);
    free(st->image_ref);
    free(st->image_id);
    free(st->reason);
    free(st->message);
    kvs_release(st->labels, st->n_labels);
    kvs_release(st->annotations, st->n_annotations);
    free(st->log_path);
    *st = (struct ck__cri_container_status){0};
}

static int exec_sync_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_exec_result *x = ctx;
    switch (no) {
    case EXEC_SYNC_STDOUT:
        return bytes(r, wire, &x->out, &x->out_len);
    case EXEC_SYNC_STDERR:
        return bytes(r, wire, &x->err, &x->err_len);
    case EXEC_SYNC_EXIT_CODE:
        return int32_field(r, wire, &x->exit_code);
    default:
        return skip(r, wire);
    }
}

int ck__cri_decode_exec_sync(struct ck__pb_reader r, struct ck__cri_exec_result *ret)
{
    struct ck__cri_exec_result x = {0};
    int e = each_field(r, exec_sync_field, &x);
    /* an output left out is empty: "" rather than NULL */
    if (e == 0 && !x.out && !(x.out = ck__strdup("")))
        e = CK_ENOMEM;
    if (e == 0 && !x.err && !(x.err = ck__strdup("")))
        e = CK_ENOMEM;
    if (e < 0)
        ck__cri_exec_result_release(&x);
    else
        *ret = x;
    return e;
}

void ck__cri_exec_result_release(struct ck__cri_exec_result *x)
{
    free(x->out);
    free(x->err);
    *x = (struct ck__cri_exec_result){0};
}

static int id_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    return no == ANSWER_ID ? string(r, wire, ctx) : skip(r, wire);
}

int ck__cri_decode_id(struct ck__pb_reader r, char **ret)
{
    char *id = NULL;
    int e = each_field(r, id_field, &id);
    if (e == 0 && !filled(id))
        e = CK_EIO;
    if (e < 0)
        free(id);
    else
        *ret = id;
    return e;
}

static int attributes_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_container_stats *st = ctx;
    switch (no) {
    case ATTR_ID:
        return string(r, wire, &st->id);
    case ATTR_METADATA:
        return ct_meta(r, wire, &st->name, NULL);
    case ATTR_LABELS:
        return map_entry(r, wire, &st->labels, &st->n_labels);
    default:
        return skip(r, wire); /* annotations */
    }
}

static int cpu_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_container_stats *st = ctx;
    switch (no) {
    case CPU_TIMESTAMP:
        return int64_field(r, wire, &st->timestamp);
    case CPU_USAGE_CORE_NS:
        return wrapper(r, wire, &st->usage_core_nano_seconds);
    case CPU_USAGE_NANO_CORES:
        return wrapper(r, wire, &st->usage_nano_cores);
    default:
        return skip(r, wire);
    }
}

static int memory_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_container_stats *st = ctx;
    if (no == MEM_WORKING_SET)
        return wrapper(r, wire, &st->working_set_bytes);
    if (no == MEM_RSS)
        return wrapper(r, wire, &st->rss_bytes);
    return skip(r, wire); /* its timestamp, available, usage, page faults */
}

/* A ContainerStats. */
static int stats_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_container_stats *st = ctx;
    switch (no) {
    case STATS_ATTRIBUTES:
        return message(r, wire, attributes_field, st);
    case STATS_CPU:
        st->has_cpu = true;
        return message(r, wire, cpu_field, st);
    case STATS_MEMORY:
        st->has_memory = true;
        return message(r, wire, memory_field, st);
    default:
        return skip(r, wire); /* writable layer, swap */
    }
}

void ck__cri_container_stats_release(struct ck__cri_container_stats *st)
{
    free(st->id);
    free(st->name);
    kvs_release(st->labels, st->n_labels);
    *st = (struct ck__cri_container_stats){0};
}

struct stats_answer {
    struct ck__cri_container_stats stats;
    bool found;
};

static int stats_answer_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct stats_answer *a = ctx;
    if (no != STATS_STATS)
        return skip(r, wire);
    a->found = true;
    return message(r, wire, stats_field, &a->stats);
}

int ck__cri_decode_container_stats(struct ck__pb_reader r, struct ck__cri_container_stats *ret)
{
    struct stats_answer a = {0};
    int e = each_field(r, stats_answer_field, &a);
    if (e == 0 && !a.found)
        e = CK_EIO;
    if (e < 0)
        ck__cri_container_stats_release(&a.stats);
    else
        *ret = a.stats;
    return e;
}

static int list_stats_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_stats_list *l = ctx;
    if (no != STATS_STATS)
        return skip(r, wire);
    return repeated_message(r, wire, (void **)&l->items, &l->n, sizeof(*l->items), stats_field);
}

int ck__cri_decode_list_container_stats(struct ck__pb_reader r, struct ck__cri_stats_list *ret)
{
    struct ck__cri_stats_list l = {0};
    int e = each_field(r, list_stats_field, &l);
    if (e < 0)
        ck__cri_stats_list_release(&l);
    else
        *ret = l;
    return e;
}

void ck__cri_stats_list_release(struct ck__cri_stats_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        ck__cri_container_stats_release(&l->items[i]);
    free(l->items);
    *l = (struct ck__cri_stats_list){0};
}

/* PodSandboxMetadata, into a sandbox's stats. */
static int sandbox_stats_meta_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_sandbox_stats *st = ctx;
    switch (no) {
    case SB_META_NAME:
        return string(r, wire, &st->name);
    case SB_META_UID:
        return string(r, wire, &st->uid);
    case SB_META_NAMESPACE:
        return string(r, wire, &st->ns);
    default:
        return skip(r, wire);
    }
}

static int sandbox_attributes_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_sandbox_stats *st = ctx;
    switch (no) {
    case SB_ATTR_ID:
        return string(r, wire, &st->id);
    case SB_ATTR_METADATA:
        return message(r, wire, sandbox_stats_meta_field, st);
    case SB_ATTR_LABELS:
        return map_entry(r, wire, &st->labels, &st->n_labels);
    default:
        return skip(r, wire); /* annotations */
    }
}

/* LinuxPodSandboxStats: the pod's CPU and memory (read as a container's are), its containers. */
static int sandbox_linux_stats_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_sandbox_stats *st = ctx;
    switch (no) {
    case SB_LINUX_CPU:
        st->usage.has_cpu = true;
        return message(r, wire, cpu_field, &st->usage);
    case SB_LINUX_MEMORY:
        st->usage.has_memory = true;
        return message(r, wire, memory_field, &st->usage);
    case SB_LINUX_CONTAINERS:
        return repeated_message(r, wire, (void **)&st->containers, &st->n_containers,
                                sizeof(*st->containers), stats_field);
    default:
        return skip(r, wire); /* network, process */
    }
}

/* A PodSandboxStats. */
static int sandbox_stats_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_sandbox_stats *st = ctx;
    if (no == SB_STATS_ATTRIBUTES)
        return message(r, wire, sandbox_attributes_field, st);
    if (no == SB_STATS_LINUX)
        return message(r, wire, sandbox_linux_stats_field, st);
    return skip(r, wire); /* windows */
}

void ck__cri_sandbox_stats_release(struct ck__cri_sandbox_stats *st)
{
    free(st->id);
    free(st->name);
    free(st->uid);
    free(st->ns);
    kvs_release(st->labels, st->n_labels);
    ck__cri_container_stats_release(&st->usage);
    for (size_t i = 0; i < st->n_containers; i++)
        ck__cri_container_stats_release(&st->containers[i]);
    free(st->containers);
    *st = (struct ck__cri_sandbox_stats){0};
}

struct sandbox_stats_answer {
    struct ck__cri_sandbox_stats stats;
    bool found;
};

static int sandbox_stats_answer_field(void *ctx, struct ck__pb_reader *r, uint32_t no,
                                      unsigned wire)
{
    struct sandbox_stats_answer *a = ctx;
    if (no != STATS_STATS)
        return skip(r, wire);
    a->found = true;
    return message(r, wire, sandbox_stats_field, &a->stats);
}

int ck__cri_decode_sandbox_stats(struct ck__pb_reader r, struct ck__cri_sandbox_stats *ret)
{
    struct sandbox_stats_answer a = {0};
    int e = each_field(r, sandbox_stats_answer_field, &a);
    if (e == 0 && !a.found)
        e = CK_EIO;
    if (e < 0)
        ck__cri_sandbox_stats_release(&a.stats);
    else
        *ret = a.stats;
    return e;
}

static int list_sandbox_stats_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_sandbox_stats_list *l = ctx;
    if (no != STATS_STATS)
        return skip(r, wire);
    return repeated_message(r, wire, (void **)&l->items, &l->n, sizeof(*l->items),
                            sandbox_stats_field);
}

int ck__cri_decode_list_sandbox_stats(struct ck__pb_reader r,
                                      struct ck__cri_sandbox_stats_list *ret)
{
    struct ck__cri_sandbox_stats_list l = {0};
    int e = each_field(r, list_sandbox_stats_field, &l);
    if (e < 0)
        ck__cri_sandbox_stats_list_release(&l);
    else
        *ret = l;
    return e;
}

void ck__cri_sandbox_stats_list_release(struct ck__cri_sandbox_stats_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        ck__cri_sandbox_stats_release(&l->items[i]);
    free(l->items);
    *l = (struct ck__cri_sandbox_stats_list){0};
}

void ck__cri_decode_answer(const unsigned char *p, size_t n)
{
    if (n == 0)
        return;
    struct ck__pb_reader r = {p + 1, p + n};
    struct ck__cri_version v;
    struct ck__cri_status s;
    struct ck__cri_images l;
    struct ck__cri_image img;
    struct ck__cri_fs_info f;
    bool found;
    char *ref;
    union {
        struct ck__cri_sandbox_status sbs;
        struct ck__cri_sandboxes sbl;
        struct ck__cri_containers ctl;
        struct ck__cri_container_status cts;
        struct ck__cri_exec_result x;
        struct ck__cri_container_stats st;
        struct ck__cri_stats_list stl;
        struct ck__cri_sandbox_stats sbst;
        struct ck__cri_sandbox_stats_list sbstl;
    } u;
    switch (p[0] % 16) {
    case 0:
        if (ck__cri_decode_version(r, &v) == 0)
            ck__cri_version_release(&v);
        break;
    case 1:
        if (ck__cri_decode_status(r, &s) == 0) {
            ck__cri_status_condition(&s, "RuntimeReady");
            ck__cri_status_release(&s);
        }
        break;
    case 2:
        if (ck__cri_decode_list_images(r, &l) == 0)
            ck__cri_images_release(&l);
        break;
    case 3:
        if (ck__cri_decode_image_status(r, &img, &found) == 0)
            ck__cri_image_release(&img);
        break;
    case 4:
        if (ck__cri_decode_pull_image(r, &ref) == 0)
            free(ref);
        break;
    case 5:
        if (ck__cri_decode_fs_info(r, &f) == 0)
            ck__cri_fs_info_release(&f);
        break;
    case 6:
        if (ck__cri_decode_id(r, &ref) == 0)
            free(ref);
        break;
    case 7:
        if (ck__cri_decode_sandbox_status(r, &u.sbs) == 0)
            ck__cri_sandbox_status_release(&u.sbs);
        break;
    case 8:
        if (ck__cri_decode_list_sandboxes(r, &u.sbl) == 0) {
            for (size_t i = 0; i < u.sbl.n; i++)
                ck__cri_kv_get(u.sbl.items[i].labels, u.sbl.items[i].n_labels, "app");
            ck__cri_sandboxes_release(&u.sbl);
        }
        break;
    case 9:
        if (ck__cri_decode_list_containers(r, &u.ctl) == 0)
            ck__cri_containers_release(&u.ctl);
        break;
    case 10:
        if (ck__cri_decode_container_status(r, &u.cts) == 0)
            ck__cri_container_status_release(&u.cts);
        break;
    case 11:
        if (ck__cri_decode_exec_sync(r, &u.x) == 0)
            ck__cri_exec_result_release(&u.x);
        break;
    case 12:
        if (ck__cri_decode_container_stats(r, &u.st) == 0)
            ck__cri_container_stats_release(&u.st);
        break;
    case 13:
        if (ck__cri_decode_list_container_stats(r, &u.stl) == 0)
            ck__cri_stats_list_release(&u.stl);
        break;
    case 14:
        if (ck__cri_decode_sandbox_stats(r, &u.sbst) == 0)
            ck__cri_sandbox_stats_release(&u.sbst);
        break;
    default:
        if (ck__cri_decode_list_sandbox_stats(r, &u.sbstl) == 0)
            ck__cri_sandbox_stats_list_release(&u.sbstl);
    }
}

/* ---- calls ------------------------------------------------------------------------ */

int ck__cri_status_error(const char *service, const char *method, int status, const char *message,
                         struct ck_err *reterr)
{
    char unknown[24];
    const char *name = ck__grpc_code_name(status, unknown, sizeof(unknown));
    int code = status == 5   ? CK_ENOENT
               : status == 3 ? CK_EINVAL
               : status == 4 ? CK_ETIMEDOUT /* DeadlineExceeded: an ExecSync's timeout */
                             : CK_EIO;
    int full = snprintf(NULL, 0, "cri: %s %s: rpc error: code = %s desc = %s", service, method,
                        name, message);
    if (full >= (int)sizeof(reterr->msg)) /* the runtime's words first: they are what matters */
        return ck_err_set(reterr, code, "rpc error: code = %s desc = %s", name, message);
    return ck_err_set(reterr, code, "cri: %s %s: rpc error: code = %s desc = %s", service, method,
                      name, message);
}

int ck__cri_open(const char *runtime_endpoint, const char *image_endpoint, int timeout_ms,
                 struct ck__cri **ret, struct ck_err *reterr)
{
    struct ck__cri *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "cri: out of memory");
    pthread_mutex_init(&c->lock, NULL);
    c->endpoint[RUNTIME] = ck__strdup(runtime_endpoint);
    c->endpoint[IMAGE] = ck__strdup(image_endpoint ? image_endpoint : runtime_endpoint);
    c->timeout_ms = timeout_ms;
    if (!c->endpoint[RUNTIME] || !c->endpoint[IMAGE]) {
        ck__cri_close(c);
        return ck_err_set(reterr, CK_ENOMEM, "cri: out of memory");
    }
    *ret = c;
    return 0;
}

struct ck__cri *ck__cri_close(struct ck__cri *c)
{
    if (!c)
        return NULL;
    pthread_mutex_destroy(&c->lock);
    for (int i = 0; i < 2; i++) {
        for (size_t k = 0; k < c->n_idle[i]; k++)
            ck__grpc_close(c->idle[i][k]);
        free(c->endpoint[i]);
    }
    free(c);
    return NULL;
}

/*
 * A connection to the endpoint of which (the runtime's when the image service has
 * the same one): an idle one still usable, or a new one. NULL with why set.
 */
static struct ck__grpc_conn *take_conn(struct ck__cri *c, int which, int *ret_slot, char *why,
                                       size_t why_len)
{
    int slot =
        which == IMAGE && strcmp(c->endpoint[IMAGE], c->endpoint[RUNTIME]) == 0 ? RUNTIME : which;
    struct ck__grpc_conn *conn = NULL, *dead[IDLE_MAX];
    size_t n_dead = 0;
    *ret_slot = slot;
    pthread_mutex_lock(&c->lock);
    while (!conn && c->n_idle[slot] > 0) {
        conn = c->idle[slot][--c->n_idle[slot]];
        if (!ck__grpc_usable(conn)) {
            dead[n_dead++] = conn;
            conn = NULL;
        }
    }
    pthread_mutex_unlock(&c->lock);
    for (size_t i = 0; i < n_dead; i++)
        ck__grpc_close(dead[i]);
    if (!conn && ck__grpc_connect(c->endpoint[which], c->timeout_ms < 5000 ? c->timeout_ms : 5000,
                                  &conn, why, why_len) < 0)
        return NULL;
    return conn;
}

/* Gives a connection back for the next call, or closes it when there are enough. */
static void put_conn(struct ck__cri *c, int slot, struct ck__grpc_conn *conn)
{
    pthread_mutex_lock(&c->lock);
    if (ck__grpc_usable(conn) && c->n_idle[slot] < IDLE_MAX) {
        c->idle[slot][c->n_idle[slot]++] = conn;
        conn = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    ck__grpc_close(conn);
}

/*
 * Calls /runtime.v1.<service>/<method> with the message in req (released).
 * On success *ret holds the answer's bytes and *msg reads its message (the
 * caller releases *ret); a failed call's error names the method and the
 * runtime's gRPC status.
 */
static int call(struct ck__cri *c, int which, const char *method, struct ck__buf *req,
                int timeout_ms, struct ck__buf *ret, struct ck__pb_reader *msg, struct ck_err *err)
{
    const char *service = which == RUNTIME ? "RuntimeService" : "ImageService";
    if (req->err) {
        ck__buf_release(req);
        return ck_err_set(err, CK_ENOMEM, "cri: out of memory");
    }
    char path[96], why[256];
    snprintf(path, sizeof(path), "/runtime.v1.%s/%s", service, method);
    struct ck__grpc_answer a = {.body = {.max = MAX_ANSWER}};
    int r = 0, slot;
    struct ck__grpc_conn *conn = take_conn(c, which, &slot, why, sizeof(why));
    if (!conn) {
        r = ck_err_set(err, CK_EIO, "cri: %s %s: cannot connect to %s: %s", service, method,
                       c->endpoint[which], why);
    } else if (ck__grpc_call(conn, path, req->p, req->len, timeout_ms, &a, why, sizeof(why)) < 0) {
        ck__grpc_close(conn);
        r = ck_err_set(err, CK_EIO, "cri: %s %s: %s: %s", service, method, c->endpoint[which], why);
    } else {
        put_conn(c, slot, conn);
    }
    ck__buf_release(req);
    if (r < 0)
        goto out_release;
    if (!a.status_seen) {
        r = ck_err_set(err, CK_EIO, "cri: %s %s: the answer has no gRPC status", service, method);
    } else if (a.status != 0) {
        r = ck__cri_status_error(service, method, a.status, a.message, err);
    } else if (!ck__grpc_unary_message(&a.body, msg)) {
        r = ck_err_set(err, CK_EIO, "cri: %s %s: the answer is not one gRPC message", service,
                       method);
    }
    if (r == 0) {
        *ret = a.body;
        return 0;
    }
out_release:
    ck__buf_release(&a.body);
    return r;
}

/* What a decoder returned, as the call's error. */
static int decoded(int e, const char *method, struct ck_err *err)
{
    if (e == CK_ENOMEM)
        return ck_err_set(err, CK_ENOMEM, "cri: out of memory");
    if (e < 0)
        return ck_err_set(err, CK_EIO, "cri: %s: malformed answer", method);
    return 0;
}

int ck__cri_version(struct ck__cri *c, const char *version, struct ck__cri_version *ret,
                    struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_version(&req, version);
    int r = call(c, RUNTIME, "Version", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_version(msg, ret), "RuntimeService Version", reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_status(struct ck__cri *c, bool verbose, struct ck__cri_status *ret,
                   struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_status(&req, verbose);
    int r = call(c, RUNTIME, "Status", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_status(msg, ret), "RuntimeService Status", reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_list_images(struct ck__cri *c, const char *image, struct ck__cri_images *ret,
                        struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_list_images(&req, image);
    int r = call(c, IMAGE, "ListImages", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_list_images(msg, ret), "ImageService ListImages", reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_image_status(struct ck__cri *c, const char *image, struct ck__cri_image *ret,
                         bool *ret_found, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_image_status(&req, image, false);
    int r = call(c, IMAGE, "ImageStatus", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_image_status(msg, ret, ret_found), "ImageService ImageStatus",
                reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_pull_image(struct ck__cri *c, const char *image, const struct ck__cri_auth *auth,
                       int timeout_ms, char **ret_ref, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_pull_image(&req, image, auth);
    int r = call(c, IMAGE, "PullImage", &req, timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_pull_image(msg, ret_ref), "ImageService PullImage", reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_remove_image(struct ck__cri *c, const char *image, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_remove_image(&req, image);
    int r = call(c, IMAGE, "RemoveImage", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    ck__buf_release(&body); /* RemoveImageResponse is empty */
    return 0;
}

int ck__cri_image_fs_info(struct ck__cri *c, struct ck__cri_fs_info *ret, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    int r = call(c, IMAGE, "ImageFsInfo", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_fs_info(msg, ret), "ImageService ImageFsInfo", reterr);
    ck__buf_release(&body);
    return r;
}

/* ---- RuntimeService: sandboxes and containers ---- */

/* c's own timeout plus s seconds, as kubelet gives calls that wait s themselves. */
static int plus_seconds(const struct ck__cri *c, int64_t s)
{
    int64_t ms = (int64_t)c->timeout_ms + (s > 0 ? s : 0) * 1000;
    return s > INT_MAX / 1000 || ms > INT_MAX ? INT_MAX : (int)ms;
}

/* A call of one id (sandbox or container) whose answer has nothing to read. */
static int call_id(struct ck__cri *c, const char *method, const char *id, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    put_string(&req, ID_REQ_ID, id);
    int r = call(c, RUNTIME, method, &req, c->timeout_ms, &body, &msg, reterr);
    if (r == 0)
        ck__buf_release(&body);
    return r;
}

/* A call whose answer is an id or a URL (ck__cri_decode_id). */
static int call_for_id(struct ck__cri *c, const char *method, struct ck__buf *req, int timeout_ms,
                       char **ret, struct ck_err *reterr)
{
    struct ck__buf body;
    struct ck__pb_reader msg;
    int r = call(c, RUNTIME, method, req, timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    char what[64];
    snprintf(what, sizeof(what), "RuntimeService %s", method);
    r = decoded(ck__cri_decode_id(msg, ret), what, reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_run_sandbox(struct ck__cri *c, const struct ck__cri_sandbox_config *config,
                        const char *runtime_handler, int timeout_ms, char **ret_id,
                        struct ck_err *reterr)
{
    struct ck__buf req = {0};
    ck__cri_encode_run_sandbox(&req, config, runtime_handler);
    return call_for_id(c, "RunPodSandbox", &req, timeout_ms, ret_id, reterr);
}

int ck__cri_stop_sandbox(struct ck__cri *c, const char *id, struct ck_err *reterr)
{
    return call_id(c, "StopPodSandbox", id, reterr);
}

int ck__cri_remove_sandbox(struct ck__cri *c, const char *id, struct ck_err *reterr)
{
    return call_id(c, "RemovePodSandbox", id, reterr);
}

int ck__cri_sandbox_status(struct ck__cri *c, const char *id, struct ck__cri_sandbox_status *ret,
                           struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    put_string(&req, ID_REQ_ID, id);
    int r = call(c, RUNTIME, "PodSandboxStatus", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_sandbox_status(msg, ret), "RuntimeService PodSandboxStatus", reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_list_sandboxes(struct ck__cri *c, const struct ck__cri_filter *filter,
                           struct ck__cri_sandboxes *ret, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_list_sandboxes(&req, filter);
    int r = call(c, RUNTIME, "ListPodSandbox", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_list_sandboxes(msg, ret), "RuntimeService ListPodSandbox", reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_create_container(struct ck__cri *c, const char *sandbox_id,
                             const struct ck__cri_container_config *config,
                             const struct ck__cri_sandbox_config *sandbox_config, char **ret_id,
                             struct ck_err *reterr)
{
    struct ck__buf req = {0};
    ck__cri_encode_create_container(&req, sandbox_id, config, sandbox_config);
    return call_for_id(c, "CreateContainer", &req, c->timeout_ms, ret_id, reterr);
}

int ck__cri_start_container(struct ck__cri *c, const char *id, struct ck_err *reterr)
{
    return call_id(c, "StartContainer", id, reterr);
}

int ck__cri_stop_container(struct ck__cri *c, const char *id, int64_t timeout_s,
                           struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_stop_container(&req, id, timeout_s);
    int r =
        call(c, RUNTIME, "StopContainer", &req, plus_seconds(c, timeout_s), &body, &msg, reterr);
    if (r == 0)
        ck__buf_release(&body);
    return r;
}

int ck__cri_remove_container(struct ck__cri *c, const char *id, struct ck_err *reterr)
{
    return call_id(c, "RemoveContainer", id, reterr);
}

int ck__cri_list_containers(struct ck__cri *c, const struct ck__cri_filter *filter,
                            struct ck__cri_containers *ret, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_list_containers(&req, filter);
    int r = call(c, RUNTIME, "ListContainers", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_list_containers(msg, ret), "RuntimeService ListContainers", reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_container_status(struct ck__cri *c, const char *id,
                             struct ck__cri_container_status *ret, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    put_string(&req, ID_REQ_ID, id);
    int r = call(c, RUNTIME, "ContainerStatus", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_container_status(msg, ret), "RuntimeService ContainerStatus",
                reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_exec_sync(struct ck__cri *c, const char *id, const char *const *argv, size_t argc,
                      int64_t timeout_s, struct ck__cri_exec_result *ret, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_exec_sync(&req, id, argv, argc, timeout_s);
    /* kubelet: no deadline of its own for no timeout, else the runtime's plus its own */
    int r = call(c, RUNTIME, "ExecSync", &req, timeout_s > 0 ? plus_seconds(c, timeout_s) : INT_MAX,
                 &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_exec_sync(msg, ret), "RuntimeService ExecSync", reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_exec(struct ck__cri *c, const char *id, const char *const *argv, size_t argc,
                 struct ck__cri_streams streams, char **ret_url, struct ck_err *reterr)
{
    struct ck__buf req = {0};
    ck__cri_encode_exec(&req, id, argv, argc, streams);
    return call_for_id(c, "Exec", &req, c->timeout_ms, ret_url, reterr);
}

int ck__cri_attach(struct ck__cri *c, const char *id, struct ck__cri_streams streams,
                   char **ret_url, struct ck_err *reterr)
{
    struct ck__buf req = {0};
    ck__cri_encode_attach(&req, id, streams);
    return call_for_id(c, "Attach", &req, c->timeout_ms, ret_url, reterr);
}

int ck__cri_port_forward(struct ck__cri *c, const char *sandbox_id, const int32_t *ports,
                         size_t n_ports, char **ret_url, struct ck_err *reterr)
{
    struct ck__buf req = {0};
    ck__cri_encode_port_forward(&req, sandbox_id, ports, n_ports);
    return call_for_id(c, "PortForward", &req, c->timeout_ms, ret_url, reterr);
}

int ck__cri_reopen_container_log(struct ck__cri *c, const char *id, struct ck_err *reterr)
{
    return call_id(c, "ReopenContainerLog", id, reterr);
}

int ck__cri_container_stats(struct ck__cri *c, const char *id, struct ck__cri_container_stats *ret,
                            struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    put_string(&req, ID_REQ_ID, id);
    int r = call(c, RUNTIME, "ContainerStats", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_container_stats(msg, ret), "RuntimeService ContainerStats", reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_list_container_stats(struct ck__cri *c, const struct ck__cri_filter *filter,
                                 struct ck__cri_stats_list *ret, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_list_container_stats(&req, filter);
    int r = call(c, RUNTIME, "ListContainerStats", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_list_container_stats(msg, ret), "RuntimeService ListContainerStats",
                reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_sandbox_stats(struct ck__cri *c, const char *id, struct ck__cri_sandbox_stats *ret,
                          struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    put_string(&req, ID_REQ_ID, id);
    int r = call(c, RUNTIME, "PodSandboxStats", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_sandbox_stats(msg, ret), "RuntimeService PodSandboxStats", reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_list_sandbox_stats(struct ck__cri *c, const struct ck__cri_filter *filter,
                               struct ck__cri_sandbox_stats_list *ret, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_list_sandbox_stats(&req, filter);
    int r = call(c, RUNTIME, "ListPodSandboxStats", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_list_sandbox_stats(msg, ret), "RuntimeService ListPodSandboxStats",
                reterr);
    ck__buf_release(&body);
    return r;
}
