/*
 * internal.h - private to lib/apiserver; never installed.
 *
 * Helpers shared between the files of the API server: rendering Kubernetes
 * Status objects and queuing JSON responses on a libmicrohttpd connection.
 */
#ifndef CKUBE_APISERVER_INTERNAL_H
#define CKUBE_APISERVER_INTERNAL_H

#include <microhttpd.h>

#include "ckube/api.h"

/*
 * Renders a metav1.Status failure: {"kind":"Status","apiVersion":"v1",
 * "metadata":{},"status":"Failure","message":...,"reason":...,"code":...}.
 * Returns a string the caller frees, or NULL when out of memory.
 */
char *ck__status_json(unsigned int code, const char *reason, const char *message);

enum MHD_Result ck__apiserver_queue_json(struct MHD_Connection *conn, unsigned int status,
                                         const char *json);

/* Queues ck__status_json(code, reason, message) with HTTP status code. */
enum MHD_Result ck__apiserver_queue_status(struct MHD_Connection *conn, unsigned int code,
                                           const char *reason, const char *message);

/* What a resource path addresses (route.c). */
struct ck__target {
    const struct ck_kind *kind;
    char group[64];
    char version[32];
    char namespace[64];   /* "" for cluster-scoped objects and all-namespace lists */
    char name[254];       /* "" for a collection */
    char subresource[32]; /* "" for the object itself */
};

/*
 * Parses an API path (already URL-decoded, without the query). Returns 0 and
 * fills *ret, or CK_ENOENT for anything that is not a resource ckube serves
 * (discovery paths included: the caller routes those first).
 */
int ck__route(const char *path, struct ck__target *ret);

#endif /* CKUBE_APISERVER_INTERNAL_H */
