/*
 * internal.h - what lib/agent's files share and nothing else sees.
 */
#ifndef CKUBE_AGENT_INTERNAL_H
#define CKUBE_AGENT_INTERNAL_H

#include <microhttpd.h>

#include "ckube/agent.h"
#include "ckube/controllers.h"

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

#endif /* CKUBE_AGENT_INTERNAL_H */
