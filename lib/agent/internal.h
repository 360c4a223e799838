/*
 * internal.h - what lib/agent's files share and nothing else sees.
 */
#ifndef CKUBE_AGENT_INTERNAL_H
#define CKUBE_AGENT_INTERNAL_H

#include <microhttpd.h>

#include "ckube/agent.h"
#include "ckube/controllers.h"
#include "ckube/internal/util.h"

/* The agent endpoint's TLS (tls.c): PEM text of the serving pair and of the client CA. */
struct ck__agent_tls {
    char *cert, *key;
    char *client_ca; /* NULL: no client certificate is asked for */
};

/*
 * Reads the serving pair of config (--tls-cert-file/--tls-private-key-file), or signs one
 * for the node and address into <root_dir>/pki (reused while valid), and the client CA.
 */
int ck__agent_tls_load(const struct ck_agent_config *config, const char *root_dir,
                       const char *address, struct ck__agent_tls *ret, struct ck_err *reterr);
void ck__agent_tls_release(struct ck__agent_tls *tls);
/* 0 when the connection's client certificate is valid for the client CA; else CK_EPERM. */
int ck__agent_tls_check_client(struct MHD_Connection *conn, bool required);

/*
 * Starts the agent's HTTPS endpoint (logserver.c: logs and exec) for a on address:port,
 * or NULL when the port cannot be had. The daemon copies nothing: tls must outlive it.
 * Stop it with MHD_stop_daemon() before freeing a, then free *ret_context.
 */
struct MHD_Daemon *ck__agent_log_server_start(struct ck_agent *a, const char *address, int port,
                                              const struct ck__agent_tls *tls, void **ret_context);

/*
 * The environment (NULL-terminated "NAME=value" strings) and working directory a running
 * container of a pod got, both malloc'd, for exec. 0, CK_ENOENT (no such pod, or the
 * container does not run) or CK_ENOMEM.
 */
int ck__agent_container_env(struct ck_agent *a, const char *ns, const char *pod,
                            const char *container, char ***ret_env, char **ret_dir);

/* ---- exec sessions (exec.c) ---- */

#define CK_EXEC_SESSION_ID_MAX 64

struct ck__exec_session;
struct ck__exec_spec {
    const char *id; /* chosen by the API server, at most CK_EXEC_SESSION_ID_MAX bytes */
    char *const *argv;
    char *const *envp;
    const char *dir;
    bool want_stdin, tty;
};
/*
 * Starts the command of spec (a shim's child in its own session; a pty with tty) and
 * registers the session under its id. 0; CK_EEXIST, CK_ENOMEM or CK_EIO with why in msg.
 */
int ck__exec_session_start(const struct ck__exec_spec *spec, struct ck__exec_session **ret,
                           char *msg, size_t size);
pid_t ck__exec_session_pid(const struct ck__exec_session *s);
/*
 * The next output record(s) into buf (max > 1100): a record on channel 1 or 2, the
 * Status on channel 3 once the output ended, then -1 (MHD's end of stream); 0 when
 * nothing came within a second.
 */
ssize_t ck__exec_session_read(struct ck__exec_session *s, char *buf, size_t max);
/* Kills what is left of the command's process group and forgets the session. */
void ck__exec_session_end(struct ck__exec_session *s);

/* The input side of the session named id (stdin, resize, close records), or NULL. */
struct ck__exec_input;
struct ck__exec_input *ck__exec_input_new(const char *id);
/* Acts on the whole records among data; returns how many bytes it took. */
size_t ck__exec_input_take(struct ck__exec_input *in, const void *data, size_t n);

/* exec.c: GET /exec/{namespace}/{pod}/{container} starts a session and streams it. */
enum MHD_Result ck__agent_exec_start(struct ck_agent *a, struct MHD_Connection *conn,
                                     const char *url);
/* exec.c: POST /execInput/{session}, the session's stdin; *req is the request's state. */
enum MHD_Result ck__agent_exec_input(struct MHD_Connection *conn, const char *url,
                                     const char *upload, size_t *upload_size, void **req);
/* Ends the input side (the end of the session) and frees it. NULL: no-op. */
void ck__agent_exec_input_done(void *req);

/* ---- podconfig.c: ConfigMaps and Secrets in env and volumes ---- */

/* Where a pod's references are read: its namespace, and its downward API values. */
struct ck__pod_refs {
    const struct ck_ctl_client *ctl;
    const char *ns;
    char *(*field_ref)(void *arg, const char *field_path);            /* malloc'd, or NULL */
    void (*warn)(void *arg, const char *reason, const char *message); /* a Warning event */
    void *arg;
};

/* An environment being built: v[n] is NULL. */
struct ck__env {
    char **v;
    size_t n;
};

/* Adds (or replaces) name=value. 0 or CK_ENOMEM. */
int ck__env_add(struct ck__env *env, const char *name, const char *value);
/*
 * Adds a container's envFrom, then its env entries that reference a ConfigMap or a
 * Secret. 0, or the error (the kubelet's message) that makes the container's
 * CreateContainerConfigError.
 */
int ck__env_from_refs(const struct ck__pod_refs *refs, const json_t *container, struct ck__env *env,
                      struct ck_err *reterr);
void ck__env_free(struct ck__env *env);

/*
 * Writes a configMap, secret, downwardAPI or projected volume's files into dir (other
 * kinds: nothing). 0, or the error that keeps the pod from starting.
 */
int ck__volume_write(const struct ck__pod_refs *refs, const json_t *vol, const char *dir,
                     struct ck_err *reterr);

/*
 * The rotated files of the container log at path (path.<YYYYmmdd-HHMMSS>...), as paths,
 * oldest first (their names sort by time); the ones being written (.tmp) only when
 * with_tmp. Caller frees each and the array; NULL with *ret_n 0 when there are none.
 * logread.c reads them; process.c removes the excess.
 */
char **ck__log_rotated_files(const char *path, bool with_tmp, size_t *ret_n);

/* ---- the CRI client (cri.c): runtime.v1 of k8s.io/cri-api over gRPC ----------- */

/* A client of one runtime (and its image service); its calls may come from any thread. */
struct ck__cri;

/* VersionResponse. */
struct ck__cri_version {
    char *version, *runtime_name, *runtime_version, *runtime_api_version; /* NULL: unset */
};

/* RuntimeCondition: RuntimeReady, NetworkReady. */
struct ck__cri_condition {
    char *type;
    bool status;
    char *reason, *message;
};

/* StatusResponse: the conditions of its RuntimeStatus (info, handlers and features unread). */
struct ck__cri_status {
    struct ck__cri_condition *conditions;
    size_t n_conditions;
};

/* Image (its spec unread). */
struct ck__cri_image {
    char *id;
    char **repo_tags, **repo_digests;
    size_t n_repo_tags, n_repo_digests;
    uint64_t size;
    bool has_uid; /* uid is set: the image runs as a numeric user */
    int64_t uid;
    char *username;
    bool pinned;
};

/* ListImagesResponse. */
struct ck__cri_images {
    struct ck__cri_image *items;
    size_t n;
};

/* AuthConfig, for PullImage: NULL or empty members are left out. */
struct ck__cri_auth {
    const char *username, *password, *auth, *server_address, *identity_token, *registry_token;
};

/* FilesystemUsage. */
struct ck__cri_fs_usage {
    int64_t timestamp; /* ns since the epoch */
    char *mountpoint;  /* fs_id.mountpoint */
    bool has_used_bytes, has_inodes_used;
    uint64_t used_bytes, inodes_used;
};

/* ImageFsInfoResponse. */
struct ck__cri_fs_info {
    struct ck__cri_fs_usage *image_fs, *container_fs;
    size_t n_image_fs, n_container_fs;
};

/*
 * A client of the runtime at runtime_endpoint and the image service at image_endpoint
 * (NULL: the runtime's), each "unix:///path" (or host:port); calls wait up to timeout_ms.
 * Nothing is dialled until the first call. 0 and *ret (ck__cri_close() it), or CK_ENOMEM.
 */
int ck__cri_open(const char *runtime_endpoint, const char *image_endpoint, int timeout_ms,
                 struct ck__cri **ret, struct ck_err *reterr);
/* Closes the connections and frees c; NULL is a no-op. Returns NULL. */
struct ck__cri *ck__cri_close(struct ck__cri *c);

/*
 * The calls. Each returns 0 and fills its result (the caller releases it), or fails
 * leaving it alone: CK_EIO when the runtime cannot be reached, its answer is malformed
 * or the call failed (the message names the method and the gRPC status: "cri:
 * ImageService PullImage: rpc error: code = Unknown desc = ..."), CK_ENOENT for gRPC's
 * NotFound, CK_EINVAL for InvalidArgument, CK_ENOMEM.
 */
/* RuntimeService/Version: version is the CRI version the caller speaks (may be NULL). */
int ck__cri_version(struct ck__cri *c, const char *version, struct ck__cri_version *ret,
                    struct ck_err *reterr);
int ck__cri_status(struct ck__cri *c, struct ck__cri_status *ret, struct ck_err *reterr);
/* ImageService/ListImages, of every image or (image not NULL) those the filter matches. */
int ck__cri_list_images(struct ck__cri *c, const char *image, struct ck__cri_images *ret,
                        struct ck_err *reterr);
/* ImageService/ImageStatus: *ret_found false (and *ret empty) when the runtime has none. */
int ck__cri_image_status(struct ck__cri *c, const char *image, struct ck__cri_image *ret,
                         bool *ret_found, struct ck_err *reterr);
/* ImageService/PullImage within timeout_ms: *ret_ref, the image's reference (freed by the caller).
 */
int ck__cri_pull_image(struct ck__cri *c, const char *image, const struct ck__cri_auth *auth,
                       int timeout_ms, char **ret_ref, struct ck_err *reterr);
int ck__cri_remove_image(struct ck__cri *c, const char *image, struct ck_err *reterr);
int ck__cri_image_fs_info(struct ck__cri *c, struct ck__cri_fs_info *ret, struct ck_err *reterr);

void ck__cri_version_release(struct ck__cri_version *v);
void ck__cri_status_release(struct ck__cri_status *s);
void ck__cri_image_release(struct ck__cri_image *img);
void ck__cri_images_release(struct ck__cri_images *l);
void ck__cri_fs_info_release(struct ck__cri_fs_info *f);
/* The condition of that type in s, or NULL. */
const struct ck__cri_condition *ck__cri_status_condition(const struct ck__cri_status *s,
                                                         const char *type);

/*
 * The messages on their own, for tests: requests appended to b (its err says whether
 * memory ran out), answers decoded from a message's bytes into a result the caller
 * releases: 0, CK_EIO when malformed (nothing is kept), CK_ENOMEM.
 */
void ck__cri_encode_version(struct ck__buf *b, const char *version);
void ck__cri_encode_status(struct ck__buf *b, bool verbose);
void ck__cri_encode_list_images(struct ck__buf *b, const char *image);
void ck__cri_encode_image_status(struct ck__buf *b, const char *image, bool verbose);
void ck__cri_encode_pull_image(struct ck__buf *b, const char *image,
                               const struct ck__cri_auth *auth);
void ck__cri_encode_remove_image(struct ck__buf *b, const char *image);
int ck__cri_decode_version(struct ck__pb_reader r, struct ck__cri_version *ret);
int ck__cri_decode_status(struct ck__pb_reader r, struct ck__cri_status *ret);
int ck__cri_decode_list_images(struct ck__pb_reader r, struct ck__cri_images *ret);
int ck__cri_decode_image_status(struct ck__pb_reader r, struct ck__cri_image *ret, bool *ret_found);
int ck__cri_decode_pull_image(struct ck__pb_reader r, char **ret_ref);
int ck__cri_decode_fs_info(struct ck__pb_reader r, struct ck__cri_fs_info *ret);

/*
 * A failed call's error (service and method as "ImageService", "PullImage"): the gRPC
 * status as Go's gRPC prints it, "rpc error: code = NotFound desc = <message>";
 * returns CK_ENOENT for NotFound (5), CK_EINVAL for InvalidArgument (3), else CK_EIO.
 */
int ck__cri_status_error(const char *service, const char *method, int status, const char *message,
                         struct ck_err *reterr);

/*
 * Decodes bytes as a CRI answer: p[0] % 6 picks Version, Status, ListImages,
 * ImageStatus, PullImage or ImageFsInfo; the rest is the message. For
 * fuzz/fuzz_cri_answer.c.
 */
void ck__cri_decode_answer(const unsigned char *p, size_t n);

#endif /* CKUBE_AGENT_INTERNAL_H */
