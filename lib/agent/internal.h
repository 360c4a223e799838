/*
 * internal.h - what lib/agent's files share and nothing else sees.
 */
#ifndef CKUBE_AGENT_INTERNAL_H
#define CKUBE_AGENT_INTERNAL_H

#include <microhttpd.h>

#include "ckube/agent.h"
#include "ckube/controllers.h"

/*
 * Starts the log server (logserver.c) for a on address:port, or NULL when the port
 * cannot be had. Stop it with MHD_stop_daemon() before freeing a.
 */
struct MHD_Daemon *ck__agent_log_server_start(struct ck_agent *a, const char *address, int port);

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
