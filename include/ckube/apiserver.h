/*
 * ckube/apiserver.h - the ckube API server, embeddable in any process.
 *
 * It stores Kubernetes objects in a ckube store and serves them over the
 * Kubernetes REST API (discovery, OpenAPI v3, get/list/watch/create/update/
 * delete, Tables) and the health endpoints with libmicrohttpd. The
 * namespaces default, kube-system, kube-public and kube-node-lease exist
 * from the first start. The server runs on its own threads from
 * ck_apiserver_start() until ck_apiserver_free().
 *
 * With a PKI directory (or a serving certificate) it serves HTTPS and
 * authenticates (client certificates, bearer tokens, ServiceAccount tokens,
 * anonymous) and authorizes (RBAC) every request; without, it serves plain
 * HTTP with neither, on loopback addresses only (tests and benchmarks).
 */
#ifndef CKUBE_APISERVER_H
#define CKUBE_APISERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckube/featuregate.h"
#include "ckube/util.h"

#define CK_APISERVER_DEFAULT_LISTEN "127.0.0.1:6443"

struct ck_apiserver;

struct ck_apiserver_config {
    /* "HOST:PORT" or "[V6HOST]:PORT"; port 0 picks a free port. NULL = the default. */
    const char *listen;
    /* The store: "sqlite://PATH" or "etcd://HOST:PORT[,...]" (see ckube/store.h). Required. */
    const char *store_url;
    /*
     * The feature gates the server consults, holding ckube's features (make
     * one with ck_apiserver_feature_gate_new(), set it, close it). Borrowed:
     * it must outlive the server. NULL: the server makes its own, every
     * feature at its default for Kubernetes 1.32.
     */
    struct ck_fg_gate *feature_gates;
    /*
     * TLS, authentication and authorization: on when pki_dir or
     * tls_cert_file is set. pki_dir is where the CA, the serving and admin
     * certificates and the service-account key are created or reused;
     * tls_cert_file/tls_private_key_file and client_ca_file take a user's
     * own instead; tls_sans are extra names of the serving certificate.
     */
    const char *pki_dir;
    const char *tls_cert_file;
    const char *tls_private_key_file;
    const char *client_ca_file;
    const char *const *tls_sans;
    size_t n_tls_sans;
    const char *token_auth_file;          /* kube-apiserver's static token CSV, or NULL */
    const char *service_account_key_file; /* NULL: the PKI's sa.key */
    bool anonymous_auth_disabled;         /* --anonymous-auth=false */
    /* --enable-bootstrap-token-auth: kube-system's bootstrap-token-* Secrets authenticate */
    bool enable_bootstrap_token_auth;
    /*
     * The client certificate the server presents to node agents (pods/log, pods/exec):
     * --kubelet-client-certificate/--kubelet-client-key. NULL: one the PKI signs
     * (apiserver-kubelet-client.crt, CN kube-apiserver-kubelet-client, O system:masters),
     * when it has a generated CA. kubelet_certificate_authority verifies the agents'
     * serving certificates; NULL: they are not verified (kube-apiserver's default).
     */
    const char *kubelet_client_certificate;
    const char *kubelet_client_key;
    const char *kubelet_certificate_authority;
    /*
     * Serve APIService aggregation (`ckube server` does; embedders and unit tests choose):
     * local APIServices for the served groups, the availability checks of the remote
     * ones, their discovery and the proxy to them. proxy_client_cert_file/key_file: the
     * client certificate shown to their backends (--proxy-client-cert-file,
     * --proxy-client-key-file); NULL: none.
     */
    bool aggregator;
    const char *proxy_client_cert_file;
    const char *proxy_client_key_file;
    /*
     * The request-header authenticator (--requestheader-*): a client certificate that
     * verifies against requestheader_client_ca_file (its common name in the
     * comma-separated requestheader_allowed_names, unless empty) is a front proxy's,
     * whose username, group and extra headers (comma-separated names and prefixes)
     * name the user. On with the CA file and a username header; NULL: off.
     */
    const char *requestheader_client_ca_file;
    const char *requestheader_allowed_names;
    const char *requestheader_username_headers;
    const char *requestheader_group_headers;
    const char *requestheader_extra_headers_prefix;
    /*
     * With a generated PKI (pki_dir, no client_ca_file): kubeadm's front proxy, made
     * there (front-proxy-ca.crt, front-proxy-client.crt) and used as the request-header
     * CA (allowed name front-proxy-client, X-Remote-User, X-Remote-Group,
     * X-Remote-Extra-) and the proxy client certificate. `ckube server` sets it unless
     * --requestheader-client-ca-file or --proxy-client-cert-file is given.
     */
    bool front_proxy_pki;
    /*
     * How long events live after their last activity (kube-apiserver's --event-ttl), in
     * nanoseconds, rounded up to seconds: the server removes older ones. 0: one hour,
     * Kubernetes' default; < 0: they never expire. Applies to every kind whose
     * descriptor has a last_activity hook.
     */
    int64_t event_ttl;
    /*
     * Connection bounds (docs/limits.md, "Connections and paths"); 0 takes the
     * default. max_connections: connections in all (10000);
     * max_connections_per_address: of one client address (2000);
     * request_header_timeout: seconds a connection has to send a complete
     * request header, partial data or not (32, kube-apiserver's
     * ReadHeaderTimeout), and twice that for the body. A new connection beyond a bound evicts the
     * one that has waited longest for its header; when none waits, a small reserve still lets
     * health checks and reads through.
     */
    unsigned max_connections;
    unsigned max_connections_per_address;
    unsigned request_header_timeout;
    /*
     * kube-apiserver's --max-requests-inflight and --max-mutating-requests-inflight
     * (0: 400 and 200). With API Priority and Fairness their sum is the server's
     * concurrency limit, shared by the limited priority levels (docs/flowcontrol.md).
     */
    unsigned max_requests_inflight;
    unsigned max_mutating_requests_inflight;
    /*
     * --enable-priority-and-fairness=false: no API Priority and Fairness; instead
     * kube-apiserver's max-in-flight filter, which answers 429 to a read (get, list) past
     * max_requests_inflight running, or a write past max_mutating_requests_inflight,
     * unless the user is in system:masters; watches and the other long-running requests
     * are not counted.
     */
    bool disable_priority_and_fairness;
    /*
     * The IPv4 address other members of the cluster reach this server at
     * (--advertise-address), listed in the kubernetes Service's endpoints; NULL: the
     * listen host when it is a specific non-loopback address, else the first
     * non-loopback IPv4 address of the host, as kube-apiserver picks one.
     */
    const char *advertise_address;
    /*
     * Keep the kubernetes Service's Endpoints and EndpointSlice listing every live server
     * (`ckube server` does; embedders and unit tests choose).
     */
    bool endpoint_reconciler;
    /*
     * Create the StorageClass local-path (provisioner rancher.io/local-path,
     * WaitForFirstConsumer, reclaim Delete, the default class) at start when absent, as
     * k3s ships it; the persistentvolume-binder provisions its claims.
     */
    bool local_storage_class;
    /*
     * The admission chain, as kube-apiserver's --enable-admission-plugins and
     * --disable-admission-plugins: comma-separated plugin names added to and taken from
     * Kubernetes' default set (NULL: none). Every write passes the enabled plugins in
     * kube-apiserver's order; docs/admission.md lists them and which ckube implements.
     * An unknown name, a name in both lists or enabling a plugin ckube does not
     * implement fails the start (CK_EINVAL). Embedders whose pods run as accounts
     * nobody creates disable "ServiceAccount".
     */
    const char *enable_admission_plugins;
    const char *disable_admission_plugins;
    /*
     * An AdmissionConfiguration file (--admission-control-config-file, YAML or JSON): the
     * enabled plugins' configurations (PodSecurity's PodSecurityConfiguration). NULL: none.
     * A file that cannot be read or a configuration that is not valid fails the start.
     */
    const char *admission_control_config_file;
    /* The IPv4 range of Services' cluster IPs (--service-cluster-ip-range); NULL: 10.96.0.0/12. */
    const char *service_cluster_ip_range;
    /* Services' node ports, "FIRST-LAST" (--service-node-port-range); NULL: 30000-32767. */
    const char *service_node_port_range;
    /*
     * An EncryptionConfiguration file (--encryption-provider-config): the resources it
     * names are stored encrypted by its first provider. NULL: stored as they are.
     */
    const char *encryption_provider_config;
    /*
     * More Prometheus text for /metrics from the components running in the same process
     * (`ckube server`'s informer census): called on each scrape, returns a malloc'ed text
     * or NULL. NULL: none.
     */
    char *(*metrics_text)(void *arg);
    void *metrics_text_arg;
};

/*
 * A feature gate with ckube's own features (features/ckube-features.yaml)
 * registered, emulating version `emulated` (NULL: the binary's, 1.32) within
 * Kubernetes' compatibility window (1.31 to 1.32), its log lines going to
 * ckube's logger. The caller sets values (ck_fg_apply_sources()), closes it
 * (ck_fg_close()) and frees it after the server. Returns 0, or CK_EINVAL
 * (version outside the window) / CK_ENOMEM with the reason in *reterr.
 */
int ck_apiserver_feature_gate_new(const struct ck_fg_version *emulated, struct ck_fg_gate **ret,
                                  struct ck_err *reterr);

/*
 * Binds the listen address and starts serving. On success returns 0 and sets
 * *ret_server, which the caller frees with ck_apiserver_free(). Fails with
 * CK_EINVAL (malformed address, non-loopback without TLS, unusable PKI
 * files), CK_EADDRINUSE (address taken) or CK_EIO, saying which in *reterr;
 * nothing is left running.
 */
int ck_apiserver_start(const struct ck_apiserver_config *config, struct ck_apiserver **ret_server,
                       struct ck_err *reterr);

/* The TCP port actually bound (useful with port 0). */
uint16_t ck_apiserver_port(const struct ck_apiserver *server);

/* The server's base URL, https://HOST:PORT (http:// without TLS) with the bound port. Owned by the
 * server. */
const char *ck_apiserver_url(const struct ck_apiserver *server);

/*
 * The IPv4 address the server advertises (config's advertise_address, else the one it
 * picked as that field says); "" when it found none.
 */
const char *ck_apiserver_advertise_address(const struct ck_apiserver *server);

/*
 * Writes a kubeconfig at path whose only cluster is ck_apiserver_url(), with
 * context and user "ckube" and namespace "default"; with TLS, the CA and the
 * admin client certificate and key embedded (mode 0600). Replaces the file
 * atomically. Returns 0, or CK_EIO/CK_ENOMEM with the reason in *reterr.
 */
int ck_apiserver_write_kubeconfig(const struct ck_apiserver *server, const char *path,
                                  struct ck_err *reterr);

/*
 * The files a client of this server in the same process uses: the CA
 * (*ret_ca; the serving certificate itself when it is the user's own) and a client certificate and
 * key for a component (CN=cn, O=org when org is not NULL) created or renewed under the PKI
 * directory as file_base.crt/.key. Paths are new strings the caller frees. CK_ENOENT without TLS or
 * without a generated CA (a user's own client CA).
 */
int ck_apiserver_component_credentials(const struct ck_apiserver *server, const char *file_base,
                                       const char *cn, const char *org, char **ret_ca,
                                       char **ret_cert, char **ret_key, struct ck_err *reterr);

/*
 * In-process lists and watches (lib/apiserver/inprocess.c): fills *ret_lw (the
 * list/watch source of ckube/informer.h) so that it lists and watches the collection of
 * group ("" for the core group), version and resource, in namespace (NULL or "": every
 * namespace), served by server to a component running in the same process, acting as
 * user in groups (copied; authenticated users also belong to "system:authenticated",
 * which the caller lists as an authenticator would add it).
 *
 * It answers what an HTTP LIST or watch by that user would, through the same code
 * (routing, RBAC and the node authorizer, selectors, paging, resourceVersion rules, the
 * store's watch and its per-watcher filtering) without HTTP, TLS or a JSON encoding in
 * between: a list is the List object an HTTP LIST serves, a watch delivers the objects
 * of the stored revisions. Failures are the REST client's codes with the Status it would
 * carry: CK_EPERM and 403 Forbidden, CK_ECOMPACTED and 410 Expired, CK_ENOENT for a
 * resource the server does not serve. The watch stops within a second of *stop.
 *
 * Nothing passes API Priority and Fairness or the request metrics: they count HTTP
 * requests. Release it with ck_apiserver_list_watch_release() after every list or
 * watch through it ended and before the server is freed. Returns 0, or CK_ENOMEM.
 */
struct ck_list_watch;
int ck_apiserver_list_watch_init(struct ck_apiserver *server, const char *group,
                                 const char *version, const char *resource, const char *namespace,
                                 const char *user, const char *const *groups, size_t n_groups,
                                 struct ck_list_watch *ret_lw, struct ck_err *reterr);
/*
 * The same for a metadata informer (the metadata client's reads): lists are
 * PartialObjectMetadataLists and events carry PartialObjectMetadata, as the HTTP
 * answers to an Accept of application/json;as=PartialObjectMetadata[List] are.
 */
int ck_apiserver_metadata_list_watch_init(struct ck_apiserver *server, const char *group,
                                          const char *version, const char *resource,
                                          const char *namespace, const char *user,
                                          const char *const *groups, size_t n_groups,
                                          struct ck_list_watch *ret_lw, struct ck_err *reterr);
void ck_apiserver_list_watch_release(struct ck_list_watch *lw);

/*
 * Marks the server as shutting down: /readyz fails from now on, so load
 * balancers stop sending traffic, while requests in flight finish.
 */
void ck_apiserver_begin_shutdown(struct ck_apiserver *server);

/* Stops serving, closes every connection and frees the server. NULL is a no-op. */
struct ck_apiserver *ck_apiserver_free(struct ck_apiserver *server);

#endif /* CKUBE_APISERVER_H */
