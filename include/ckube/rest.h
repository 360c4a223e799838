/*
 * ckube/rest.h - the REST client of libckube-client: kubeconfig loading and typed-less
 * calls to any Kubernetes API server (client-go rest.Config, rest.RESTClient and
 * tools/clientcmd, reduced to what controllers need).
 *
 * - ck_kubeconfig_load(): reads a kubeconfig (JSON or YAML) and resolves its current
 *   context to a server URL, a namespace, a bearer token, a CA and a client certificate.
 * - struct ck_rest: one client per process, safe to share between threads. Each call
 *   takes a token from a client-side token bucket (client-go's defaults: 5 QPS, burst
 *   10; settable), then borrows an idle libcurl handle from a small pool, so HTTP
 *   keep-alive connections are reused across calls and threads.
 * - Calls: get, list, create, update, patch, delete; the status and scale subresources;
 *   watch streams delivered event by event to a callback.
 * - What a call addresses (struct ck_resource) comes from the caller: from a kind's
 *   group/version/resource, or from discovery (ck_rest_discover_resource).
 *
 * Errors: a non-2xx answer is turned into the ck_err the caller passed, with the server's
 * Status: reterr->http_status is Status.code, reterr->reason its reason (a static string;
 * "Unknown" for one we do not know), reterr->msg its message; the return value is the
 * matching CK_E* code (404 CK_ENOENT, 409 AlreadyExists CK_EEXIST, 409 Conflict
 * CK_ECONFLICT, 410 CK_ECOMPACTED, 400/422 CK_EINVAL, 401/403 CK_EPERM, anything else
 * CK_EIO). A transport failure (refused, reset, timeout) is CK_EIO with http_status 0.
 *
 * Objects are jansson values: what a call returns is a new reference the caller owns.
 */
#ifndef CKUBE_REST_H
#define CKUBE_REST_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ckube/client.h"

/* ---- kubeconfig (client-go tools/clientcmd) ------------------------------- */

/* The current context of a kubeconfig, resolved. Strings are owned; NULL when absent. */
struct ck_kubeconfig {
    char *server;           /* clusters[].cluster.server, e.g. http://127.0.0.1:6443 */
    char *namespace;        /* contexts[].context.namespace, "default" when unset */
    char *token;            /* users[].user.token, or the content of tokenFile */
    char *ca_file;          /* certificate-authority (made absolute) */
    char *ca_data;          /* certificate-authority-data, base64-decoded PEM */
    char *client_cert_file; /* client-certificate */
    char *client_key_file;  /* client-key */
    char *client_cert_data; /* client-certificate-data, base64-decoded PEM */
    char *client_key_data;  /* client-key-data, base64-decoded PEM */
    bool insecure_skip_tls_verify;
};

/*
 * Loads the kubeconfig at path (JSON, or YAML of any style) and resolves context (NULL:
 * current-context). Relative file paths in it are taken relative to the file's directory,
 * as kubectl does. Returns 0 and sets *ret_config (free with ck_kubeconfig_free()), or
 * CK_ENOENT (no such file), CK_EINVAL (unparsable, or the context, its cluster or user is
 * missing, or the cluster has no server) or CK_ENOMEM, saying which in *reterr.
 */
int ck_kubeconfig_load(const char *path, const char *context, struct ck_kubeconfig **ret_config,
                       struct ck_err *reterr);

/* The same from a document already in memory; base_dir resolves relative paths. */
int ck_kubeconfig_parse(const char *text, size_t len, const char *base_dir, const char *context,
                        struct ck_kubeconfig **ret_config, struct ck_err *reterr);

struct ck_kubeconfig *ck_kubeconfig_free(struct ck_kubeconfig *config);

/*
 * Parses a YAML (or JSON) document into a jansson value: mappings become objects,
 * sequences arrays; plain scalars true/false/null and numbers become JSON booleans, null
 * and numbers, every other scalar a string. Returns 0 and a new reference in *ret_json,
 * or CK_EINVAL with the parser's line in *reterr. Only the first document is read.
 */
int ck_yaml_to_json(const char *text, size_t len, json_t **ret_json, struct ck_err *reterr);

/* ---- the client (client-go rest.RESTClient) ------------------------------- */

/* client-go's rest.Config defaults: DefaultQPS and DefaultBurst. */
#define CK_REST_DEFAULT_QPS   5.0
#define CK_REST_DEFAULT_BURST 10

struct ck_rest_config {
    const char *server;    /* base URL, required: http://127.0.0.1:6443 */
    const char *token;     /* bearer token, or NULL */
    const char *ca_file;   /* PEM bundle to verify the server with, or NULL */
    const char *ca_data;   /* PEM text, or NULL */
    const char *cert_file; /* client certificate and key for TLS, or NULL */
    const char *key_file;
    const char *cert_data; /* PEM texts instead of files, or NULL */
    const char *key_data;
    bool insecure_skip_tls_verify;
    /*
     * Client-side rate limit: qps tokens a second, at most burst at once. 0 picks
     * client-go's defaults (5, 10); qps < 0 turns limiting off.
     */
    double qps;
    int burst;
    const char *user_agent; /* NULL: "ckube/<version>" */
    int64_t timeout;        /* per request except watches; 0: 60 s */
    struct ck_clock *clock; /* for the token bucket; NULL = real */
};

struct ck_rest;

/* Creates a client. Returns 0 and sets *ret_client, or CK_EINVAL (no server) or CK_ENOMEM. */
int ck_rest_new(const struct ck_rest_config *config, struct ck_rest **ret_client,
                struct ck_err *reterr);

/* A client for a loaded kubeconfig, with the given rate limit (see ck_rest_config.qps). */
int ck_rest_new_from_kubeconfig(const struct ck_kubeconfig *kc, double qps, int burst,
                                struct ck_rest **ret_client, struct ck_err *reterr);

/* Closes every pooled connection and frees the client; no call may be in flight. */
struct ck_rest *ck_rest_free(struct ck_rest *client);

/* The base URL the client talks to (owned by the client). */
const char *ck_rest_server(const struct ck_rest *client);

/*
 * The certificate authority the client verifies the server with, as PEM: its CA data, else
 * its CA file's contents (kube-controller-manager's root CA when --root-ca-file is not
 * given). 0 with *ret_pem (caller frees); CK_ENOENT when it has none; CK_EIO when the file
 * cannot be read; CK_ENOMEM.
 */
int ck_rest_ca_pem(const struct ck_rest *client, char **ret_pem, struct ck_err *reterr);

struct ck_rest_stats {
    uint64_t requests;    /* HTTP requests sent, watches included */
    uint64_t connections; /* TCP connections opened: requests - connections were reuses */
    int64_t throttled;    /* total nanoseconds callers waited for the token bucket */
};
void ck_rest_stats(struct ck_rest *client, struct ck_rest_stats *ret_stats);

/*
 * What a call addresses: group ("" for the core group), version, resource (plural),
 * whether it is namespaced. For namespaced resources namespace "" means all namespaces
 * (lists and watches).
 *
 * The client keeps no list of resources: the caller says what it addresses, from the
 * kind's group/version/resource (the API library's kind descriptors) or from the
 * server's discovery documents, as client-go's RESTMapper does.
 */
struct ck_resource {
    const char *group;
    const char *version;
    const char *resource;
    bool namespaced;
};

/*
 * A resource found through discovery: res points into the strings beside it, so the
 * struct must not be copied while res is in use (pass &found.res).
 */
struct ck_api_resource {
    struct ck_resource res;
    char group[128];
    char version[64];
    char resource[128];
};

/*
 * Finds the resource that serves kind in api_version ("v1", "apps/v1", ...) through the
 * server's discovery document for that group version (GET /api/v1 or /apis/G/V), as
 * client-go's RESTMapper does: the entry whose kind matches and whose name is not a
 * subresource. Returns 0 and fills *ret, CK_ENOENT when the server does not serve that
 * kind (also when it does not serve the group version at all), CK_EINVAL for a malformed
 * api_version, or the call's error.
 */
int ck_rest_discover_resource(struct ck_rest *client, const char *api_version, const char *kind,
                              struct ck_api_resource *ret, struct ck_err *reterr);

/*
 * One request. method is GET, POST, PUT, PATCH or DELETE; path starts with '/'; body may
 * be NULL; content_type NULL means application/json. On a 2xx answer returns 0 and, when
 * ret_body is not NULL, the decoded body in *ret_body (NULL for an empty body). Otherwise
 * the error as this header's comment says.
 */
int ck_rest_do(struct ck_rest *client, const char *method, const char *path, const json_t *body,
               const char *content_type, json_t **ret_body, struct ck_err *reterr);

/*
 * A GET of path with a query of n key/value pairs (values URL-escaped; a NULL or empty
 * value left out, as client-go leaves out empty options), as ck_rest_do().
 */
int ck_rest_get_query(struct ck_rest *client, const char *path, const char *const (*pairs)[2],
                      size_t n, json_t **ret_body, struct ck_err *reterr);

/*
 * ck_rest_do() asking for the media types in accept (an Accept header value; NULL:
 * "application/json"), as client-go's metadata client asks for PartialObjectMetadata.
 */
int ck_rest_do_accept(struct ck_rest *client, const char *method, const char *path,
                      const json_t *body, const char *content_type, const char *accept,
                      json_t **ret_body, struct ck_err *reterr);

/*
 * Builds the path of res in namespace (may be "" or NULL), object name (NULL for the
 * collection) and subresource (NULL for none), with an optional query (without '?').
 * Writes at most size bytes; returns the length, or -1 when it did not fit or a part
 * contains characters that would need escaping ('/', '?', '#', '%', spaces, controls).
 */
int ck_rest_path(const struct ck_resource *res, const char *namespace, const char *name,
                 const char *subresource, const char *query, char *buf, size_t size);

/* GET one object. */
int ck_rest_get(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                const char *name, json_t **ret_obj, struct ck_err *reterr);

struct ck_list_options {
    const char *label_selector;
    const char *field_selector;
    const char *resource_version;
    const char *resource_version_match; /* "NotOlderThan", "Exact" or NULL */
    int64_t limit;                      /* page size; 0: everything at once */
    const char *continue_token;
    int timeout_seconds;        /* watches: ask the server to end the stream after it */
    bool allow_watch_bookmarks; /* watches */
};

/* GET a collection (one page when opts->limit is set). *ret_list is the List object. */
int ck_rest_list(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                 const struct ck_list_options *opts, json_t **ret_list, struct ck_err *reterr);

/* ck_rest_list() with an Accept header value (NULL: "application/json"). */
int ck_rest_list_accept(struct ck_rest *client, const struct ck_resource *res,
                        const char *namespace, const struct ck_list_options *opts,
                        const char *accept, json_t **ret_list, struct ck_err *reterr);

/* POST obj to the collection; *ret_obj (may be NULL) gets what the server stored. */
int ck_rest_create(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                   const json_t *obj, json_t **ret_obj, struct ck_err *reterr);

/* PUT obj (its metadata.name names it; its resourceVersion makes the update conditional). */
int ck_rest_update(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                   const json_t *obj, json_t **ret_obj, struct ck_err *reterr);

/* PUT obj to its status subresource (UpdateStatus). */
int ck_rest_update_status(struct ck_rest *client, const struct ck_resource *res,
                          const char *namespace, const json_t *obj, json_t **ret_obj,
                          struct ck_err *reterr);

/* The patch types of Kubernetes, as their content types. */
#define CK_PATCH_JSON      "application/json-patch+json"
#define CK_PATCH_MERGE     "application/merge-patch+json"
#define CK_PATCH_STRATEGIC "application/strategic-merge-patch+json"

/* PATCH name (or its subresource, NULL for none) with a patch of type patch_type. */
int ck_rest_patch(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                  const char *name, const char *subresource, const char *patch_type,
                  const json_t *patch, json_t **ret_obj, struct ck_err *reterr);

/*
 * DELETE name. options is a DeleteOptions object or NULL (preconditions, propagation);
 * *ret_obj (may be NULL) gets the server's answer (the object, or a Status).
 */
int ck_rest_delete(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                   const char *name, const json_t *options, json_t **ret_obj,
                   struct ck_err *reterr);

/* GET and PUT the scale subresource (an autoscaling/v1 Scale). */
int ck_rest_get_scale(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                      const char *name, json_t **ret_scale, struct ck_err *reterr);
int ck_rest_update_scale(struct ck_rest *client, const struct ck_resource *res,
                         const char *namespace, const char *name, int64_t replicas,
                         json_t **ret_scale, struct ck_err *reterr);

/*
 * A watch event: type is ADDED, MODIFIED, DELETED, BOOKMARK or ERROR; object is the
 * object (for ERROR a Status), a new reference the function takes (and may share: no
 * one else holds one). Return 0 to go on, anything else to end the watch (ck_rest_watch
 * returns it).
 */
typedef int (*ck_watch_func)(const char *type, json_t *object, void *arg);

/*
 * Opens a watch on res (opts->resource_version and friends as for lists; watch=true is
 * added) and delivers its events to fn, one per line of the stream, on the calling
 * thread, until the server ends the stream (returns 0), fn returns non-zero (returns
 * that), *stop becomes true (checked at least every second; returns CK_ESHUTDOWN), the
 * connection fails (CK_EIO) or the server refuses the watch (its Status, as above).
 * stop may be NULL.
 */
int ck_rest_watch(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                  const struct ck_list_options *opts, ck_watch_func fn, void *arg,
                  const atomic_bool *stop, struct ck_err *reterr);

/* ck_rest_watch() with an Accept header value (NULL: "application/json"). */
int ck_rest_watch_accept(struct ck_rest *client, const struct ck_resource *res,
                         const char *namespace, const struct ck_list_options *opts,
                         const char *accept, ck_watch_func fn, void *arg, const atomic_bool *stop,
                         struct ck_err *reterr);

/*
 * Sets *reterr from a Status object (an ERROR watch event, or an error body): code,
 * reason, message. Returns the CK_E* code for it.
 */
int ck_rest_status_error(const json_t *status, struct ck_err *reterr);

/* ---- discovery (client-go discovery.DiscoveryClient, cached) ---------------- */

/* The verbs of a discovered resource, as bits. */
#define CK_VERB_GET              (1u << 0)
#define CK_VERB_LIST             (1u << 1)
#define CK_VERB_WATCH            (1u << 2)
#define CK_VERB_CREATE           (1u << 3)
#define CK_VERB_UPDATE           (1u << 4)
#define CK_VERB_PATCH            (1u << 5)
#define CK_VERB_DELETE           (1u << 6)
#define CK_VERB_DELETECOLLECTION (1u << 7)

/*
 * One resource the server serves in one group version (a top-level resource: the
 * discovery entries naming subresources, "pods/status", are left out). res points into
 * the strings beside it.
 */
struct ck_discovered {
    struct ck_resource res;
    char group[128];
    char version[64];
    char resource[128];
    char kind[128];
    char api_version[192]; /* "v1", "apps/v1" */
    unsigned verbs;        /* CK_VERB_* */
    bool preferred;        /* in its group's preferred version */
};

/*
 * What discovery found at one moment: immutable and shared, so a reader keeps it as long
 * as it likes. failed names the group versions whose documents could not be read (they
 * are absent from resources), as client-go's ErrGroupDiscoveryFailed.
 */
struct ck_discovery_snapshot {
    atomic_int refs;
    struct ck_discovered *resources;
    size_t n;
    char **failed; /* "group/version" strings */
    size_t n_failed;
    int64_t taken; /* when (the discovery's clock) */
};

/* Where discovery documents come from: GET path, returning the decoded JSON document. */
struct ck_discovery_source {
    int (*get)(void *ctx, const char *path, json_t **ret_doc, struct ck_err *reterr);
    void *ctx;
};

/* The source over a REST client (borrowed; it must outlive the source's use). */
void ck_discovery_source_rest(struct ck_discovery_source *src, struct ck_rest *client);

struct ck_discovery;

/*
 * A cached discovery client over src (copied; its context is borrowed). ttl: how long a
 * snapshot is fresh (0: 30 s); clock NULL = real. Nothing is read until first asked.
 * Returns 0 or CK_ENOMEM.
 */
int ck_discovery_new(const struct ck_discovery_source *src, int64_t ttl, struct ck_clock *clock,
                     struct ck_discovery **ret_d, struct ck_err *reterr);
struct ck_discovery *ck_discovery_free(struct ck_discovery *d);

/*
 * Reads every discovery document now (GET /api, /api/v1, /apis, /apis/G/V for every
 * version of every group) and publishes a new snapshot. A group version that fails is
 * listed in the snapshot's failed list and the call still succeeds; only a failure of
 * /api or /apis fails it (the old snapshot stays). Thread-safe; concurrent refreshes
 * each read the server.
 */
int ck_discovery_refresh(struct ck_discovery *d, struct ck_err *reterr);

/*
 * The current snapshot, refreshed first when there is none or it is older than the ttl.
 * Returns 0 and a new reference in *ret_snap (drop it with ck_discovery_snapshot_unref),
 * or the refresh's error.
 */
int ck_discovery_get(struct ck_discovery *d, struct ck_discovery_snapshot **ret_snap,
                     struct ck_err *reterr);

/* Forgets the snapshot, so the next get reads the server (client-go's Invalidate). */
void ck_discovery_invalidate(struct ck_discovery *d);

struct ck_discovery_snapshot *ck_discovery_snapshot_ref(struct ck_discovery_snapshot *s);
struct ck_discovery_snapshot *ck_discovery_snapshot_unref(struct ck_discovery_snapshot *s);

/*
 * The resource serving kind in api_version ("v1", "apps/v1"), or NULL (borrowed from the
 * snapshot).
 */
const struct ck_discovered *ck_discovery_find_kind(const struct ck_discovery_snapshot *s,
                                                   const char *api_version, const char *kind);

/* The resource group/version/resource, or NULL (borrowed from the snapshot). */
const struct ck_discovered *ck_discovery_find(const struct ck_discovery_snapshot *s,
                                              const char *group, const char *version,
                                              const char *resource);

/* ---- the metadata client (client-go metadata.Interface) --------------------- */

/*
 * What the metadata client asks for, as client-go does: PartialObjectMetadata (and its
 * List) as JSON, with plain JSON as the fallback a server that does not know the form
 * answers with.
 */
#define CK_ACCEPT_PARTIAL_METADATA                                                                 \
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
#define CK_ACCEPT_PARTIAL_METADATA_LIST                                                            \
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

/*
 * The PartialObjectMetadata of obj: {"apiVersion":"meta.k8s.io/v1",
 * "kind":"PartialObjectMetadata","metadata":...} with obj's metadata (shared, not
 * copied). An object that already is one is returned with a new reference. NULL when
 * obj has no metadata object or out of memory.
 */
json_t *ck_metadata_strip(json_t *obj);

/*
 * The metadata client's calls: each means what the ck_rest call of the same name means,
 * but asks for PartialObjectMetadata and, when the server answers full objects, strips
 * them on arrival, so what the caller gets is metadata only either way.
 */
int ck_metadata_get(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                    const char *name, json_t **ret_obj, struct ck_err *reterr);
int ck_metadata_list(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                     const struct ck_list_options *opts, json_t **ret_list, struct ck_err *reterr);
int ck_metadata_watch(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                      const struct ck_list_options *opts, ck_watch_func fn, void *arg,
                      const atomic_bool *stop, struct ck_err *reterr);
int ck_metadata_patch(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                      const char *name, const char *patch_type, const json_t *patch,
                      json_t **ret_obj, struct ck_err *reterr);
int ck_metadata_delete(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                       const char *name, const json_t *options, struct ck_err *reterr);

/*
 * DELETE on the collection of res in namespace (deletecollection), with options (a
 * DeleteOptions object or NULL) and label_selector (NULL: everything).
 */
int ck_metadata_delete_collection(struct ck_rest *client, const struct ck_resource *res,
                                  const char *namespace, const json_t *options,
                                  const char *label_selector, struct ck_err *reterr);

#endif /* CKUBE_REST_H */
