/*
 * authn_authz.c - TLS material, authentication, impersonation and RBAC
 * authorization of the API server's requests, and what the server computes
 * from them rather than stores: TokenRequest and the reviews.
 *
 * At start (ck__auth_init) the PKI directory is created or reused through
 * libckube-auth (CA, serving certificate, admin certificate,
 * service-account key), and the static token file and the service-account
 * key are loaded. Once the registry exists (ck__auth_bootstrap) the bootstrap
 * ClusterRoles and ClusterRoleBindings are written when missing and
 * reconciled when present (missing rules, aggregation selectors and subjects
 * added), as kube-apiserver's RBAC post-start hook does (and kube-system's
 * extension-apiserver-authentication-reader Role and RoleBinding, with the
 * ConfigMap it reads); store watches of
 * the four RBAC kinds start, then the policy is compiled from the store.
 *
 * Per request (ck__auth_authenticate, then ck__auth_authorize once API
 * Priority and Fairness has admitted it), before routing, kube-apiserver's filter
 * order: authentication (the client certificate libmicrohttpd's GnuTLS
 * session received, verified here against the client CA, or a front proxy's
 * certificate and identity headers with --requestheader-* (requestheader.c); else the bearer
 * token, a ServiceAccount token only while its account and pod exist with
 * the uids it names; else anonymous), 401 on a bad credential; then
 * impersonation (Impersonate-User/-Group/-Uid/-Extra-*, each authorized
 * with the verb impersonate); then members of system:masters pass; then
 * RBAC with attributes derived from the path and method (Kubernetes'
 * RequestInfo), 403 with Kubernetes' message.
 *
 * What a node (system:node:NAME in system:nodes) may write is the
 * NodeRestriction admission plugin's (admission/node_restriction.c). Writes of
 * roles and bindings go through the escalation check (ck__auth_check_write; a PATCH is
 * checked on the patch applied to the stored object) and rebuild the policy
 * after (ck__auth_rbac_changed), so the writer's next request sees it. The
 * follower thread rebuilds it too whenever the watches see a write of the
 * four kinds, from this server or another sharing the store. Rebuilds are
 * serialized by a mutex (so two never swap in an older view last); requests
 * in flight keep the policy they started with.
 *
 * ck__auth_serve answers POST serviceaccounts/NAME/token (a signed, bound
 * JWT) and the create-only reviews (SelfSubjectReview, TokenReview,
 * SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview,
 * SelfSubjectRulesReview).
 *
 * Without pki_dir and tls_cert_file none of this runs: plain HTTP, no
 * authentication, every request allowed, loopback only; TokenRequest and the
 * reviews answer 503.
 */
#include <ctype.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <jansson.h>
#include <microhttpd.h> /* MHD_http_unescape only */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ckube/apiserver.h"
#include "ckube/internal/util.h"
#include "internal.h"
#include "requestheader.h"

#define MAX_PEM (1u * 1024 * 1024)

struct ck__auth;
static void stop_following(struct ck__auth *a);
static int start_following(struct ck__auth *a, struct ck_err *reterr);
static int reconcile_bootstrap(struct ck_apiserver *server, const json_t *roles,
                               const json_t *bindings, struct ck_err *reterr);
static int reconcile_authentication_reader(struct ck_apiserver *server, struct ck_err *reterr);
static void publish_authentication(struct ck_apiserver *server);

#define AUTH_CONFIGMAP "extension-apiserver-authentication"
#define AUTH_READER    "extension-apiserver-authentication-reader"
static int validate_sa_claims(void *arg, const json_t *claims, struct ck_err *reterr);
static json_t *bootstrap_secret(void *arg, const char *token_id);
static int impersonate(struct ck__auth *a, struct ck__req *hreq, struct ck_auth_user **user,
                       struct ck_err *err);
static bool node_may_read(struct ck_apiserver *server, const char *node,
                          const struct ck_rbac_request *req, bool secret);

struct ck__auth {
    struct ck_pki pki;
    char *pki_dir;
    char *cert_pem, *key_pem, *client_ca_pem;
    /* --requestheader-*: the authenticator, the client CA alone (the TLS session trusts
       both CAs) and the two CAs libmicrohttpd trusts; NULL without request-header */
    struct ck__requestheader *requestheader;
    gnutls_x509_trust_list_t client_trust;
    char *trust_pem;
    char *front_proxy_ca, *front_proxy_cert, *front_proxy_key; /* front_proxy_pki's files */
    struct ck_auth_tokens *tokens;
    struct ck_auth_sa_key *sa_key;
    struct ck_auth_config config;
    struct ck_rbac_authorizer *authorizer;
    bool missed; /* a change came before the first policy was in place; under rebuild_lock */
    pthread_mutex_t rebuild_lock;
    /* the follower: store watches of the four RBAC kinds and the thread that rebuilds */
    struct ck_apiserver *server;
    struct ck_store_watch *watches[4];
    pthread_t follower;
    bool follower_started;
    pthread_mutex_t follow_lock;
    pthread_cond_t follow_wake;
    bool dirty, watch_lost, stopping; /* under follow_lock */
};

static int read_pem(const char *path, char **ret, struct ck_err *reterr)
{
    size_t len;
    int r = ck__read_file(path, MAX_PEM, ret, &len);
    if (r < 0)
        return ck_err_set(reterr, CK_EIO, "cannot read %s: %s", path,
                          r == CK__E2BIG ? "too large" : strerror(-r));
    return 0;
}

/*
 * With a request-header CA the TLS session trusts it too (its certificates must reach
 * the authenticator), and the client CA alone is kept to tell a client's certificate.
 */
static int trust_requestheader(struct ck__auth *a, struct ck_err *reterr)
{
    const char *rh_ca = ck__requestheader_ca_pem(a->requestheader);
    if (!rh_ca)
        return 0;
    const char *client_ca = a->client_ca_pem ? a->client_ca_pem : "";
    if (client_ca[0]) {
        gnutls_datum_t pem = {(unsigned char *)a->client_ca_pem, (unsigned)strlen(client_ca)};
        if (gnutls_x509_trust_list_init(&a->client_trust, 0) < 0)
            return ck_err_no_memory(reterr);
        if (gnutls_x509_trust_list_add_trust_mem(a->client_trust, &pem, NULL, GNUTLS_X509_FMT_PEM,
                                                 0, 0) <= 0)
            return ck_err_set(reterr, CK_EINVAL, "unable to load client CA file");
    }
    size_t size = strlen(client_ca) + strlen(rh_ca) + 2;
    if (!(a->trust_pem = ck__malloc(size)))
        return ck_err_no_memory(reterr);
    snprintf(a->trust_pem, size, "%s\n%s", client_ca, rh_ca);
    return 0;
}

static char *pki_path(const struct ck__auth *a, const char *name)
{
    size_t size = strlen(a->pki_dir) + strlen(name) + 2;
    char *path = ck__malloc(size);
    if (path)
        snprintf(path, size, "%s/%s", a->pki_dir, name);
    return path;
}

/* kubeadm's front proxy in the generated PKI, and the flags kubeadm gives kube-apiserver. */
static int front_proxy(struct ck__auth *a, const struct ck_pki_options *opts,
                       struct ck_apiserver_config *config, struct ck_err *reterr)
{
    int r = ck_pki_front_proxy(opts, reterr);
    if (r < 0)
        return r;
    a->front_proxy_ca = pki_path(a, CK_PKI_FRONT_PROXY_CA_CERT);
    a->front_proxy_cert = pki_path(a, CK_PKI_FRONT_PROXY_CLIENT_CERT);
    a->front_proxy_key = pki_path(a, CK_PKI_FRONT_PROXY_CLIENT_KEY);
    if (!a->front_proxy_ca || !a->front_proxy_cert || !a->front_proxy_key)
        return ck_err_no_memory(reterr);
    config->requestheader_client_ca_file = a->front_proxy_ca;
    config->requestheader_allowed_names = "front-proxy-client";
    config->requestheader_username_headers = "X-Remote-User";
    config->requestheader_group_headers = "X-Remote-Group";
    config->requestheader_extra_headers_prefix = "X-Remote-Extra-";
    return 0;
}

int ck__auth_init(struct ck_apiserver *server, const struct ck_apiserver_config *config,
                  const char *listen_host, struct ck_err *reterr)
{
    if (!config->pki_dir && !config->tls_cert_file)
        return 0;
    struct ck__auth *a = ck__calloc(1, sizeof(*a));
    if (!a)
        return ck_err_no_memory(reterr);
    pthread_mutex_init(&a->rebuild_lock, NULL);
    pthread_mutex_init(&a->follow_lock, NULL);
    pthread_cond_init(&a->follow_wake, NULL);
    a->server = server;
    server->auth = a;
    a->pki_dir = config->pki_dir ? ck__strdup(config->pki_dir) : NULL;
    if (config->pki_dir && !a->pki_dir)
        return ck_err_no_memory(reterr);
    struct ck_pki_options opts = {
        .dir = config->pki_dir,
        .listen_address = listen_host,
        .sans = config->tls_sans,
        .n_sans = config->n_tls_sans,
        .tls_cert_file = config->tls_cert_file,
        .tls_private_key_file = config->tls_private_key_file,
        .client_ca_file = config->client_ca_file,
    };
    int r = ck_pki_ensure(&opts, &a->pki, reterr);
    if (r < 0)
        return r;
    if ((r = read_pem(a->pki.server_cert, &a->cert_pem, reterr)) < 0 ||
        (r = read_pem(a->pki.server_key, &a->key_pem, reterr)) < 0)
        return r;
    if (a->pki.client_ca && (r = read_pem(a->pki.client_ca, &a->client_ca_pem, reterr)) < 0)
        return r;
    struct ck_apiserver_config rh_config = *config;
    if (config->front_proxy_pki && a->pki_dir && a->pki.admin_cert &&
        (r = front_proxy(a, &opts, &rh_config, reterr)) < 0)
        return r;
    if ((r = ck__requestheader_new(&rh_config, &a->requestheader, reterr)) < 0 ||
        (r = trust_requestheader(a, reterr)) < 0)
        return r;
    if (config->token_auth_file &&
        (r = ck_auth_tokens_load(config->token_auth_file, &a->tokens, reterr)) < 0)
        return r;
    const char *sa_key =
        config->service_account_key_file ? config->service_account_key_file : a->pki.sa_key;
    if (sa_key && (r = ck_auth_sa_key_load(sa_key, &a->sa_key, reterr)) < 0)
        return r;
    a->config = (struct ck_auth_config){
        .tokens = a->tokens,
        .sa_key = a->sa_key,
        .sa_issuer = "https://kubernetes.default.svc.cluster.local",
        .anonymous = !config->anonymous_auth_disabled,
        .sa_validate = validate_sa_claims,
        .sa_validate_arg = server,
        .bootstrap_secret = config->enable_bootstrap_token_auth ? bootstrap_secret : NULL,
        .bootstrap_secret_arg = server,
    };
    return 0;
}

void ck__auth_free(struct ck__auth *a)
{
    if (!a)
        return;
    stop_following(a);
    ck_rbac_authorizer_free(a->authorizer);
    ck_auth_sa_key_free(a->sa_key);
    ck_auth_tokens_free(a->tokens);
    free(a->cert_pem);
    free(a->key_pem);
    free(a->client_ca_pem);
    ck__requestheader_free(a->requestheader);
    if (a->client_trust)
        gnutls_x509_trust_list_deinit(a->client_trust, 1);
    free(a->trust_pem);
    free(a->front_proxy_ca);
    free(a->front_proxy_cert);
    free(a->front_proxy_key);
    free(a->pki_dir);
    ck_pki_release(&a->pki);
    pthread_mutex_destroy(&a->rebuild_lock);
    pthread_mutex_destroy(&a->follow_lock);
    pthread_cond_destroy(&a->follow_wake);
    free(a);
}

const char *ck__auth_cert_pem(const struct ck__auth *a)
{
    return a ? a->cert_pem : NULL;
}

const char *ck__auth_key_pem(const struct ck__auth *a)
{
    return a ? a->key_pem : NULL;
}

const char *ck__auth_client_ca_pem(const struct ck__auth *a)
{
    return a ? a->client_ca_pem : NULL;
}

const char *ck__auth_front_proxy_cert(const struct ck__auth *a, bool key)
{
    return !a ? NULL : key ? a->front_proxy_key : a->front_proxy_cert;
}

const char *ck__auth_trust_pem(const struct ck__auth *a)
{
    return !a ? NULL : a->trust_pem ? a->trust_pem : a->client_ca_pem;
}

struct ck_rbac_authorizer *ck__auth_authorizer(const struct ck__auth *auth)
{
    return auth ? auth->authorizer : NULL;
}

const struct ck_pki *ck__auth_pki(const struct ck__auth *a)
{
    return a ? &a->pki : NULL;
}

/* Every stored object of kind as a new array, or NULL (out of memory, store failure). */
/* The stored objects of kind (in namespace ns, or all when NULL), or NULL. */
static json_t *list_kind_in(struct ck_apiserver *server, const struct ck_kind *kind, const char *ns)
{
    json_t *items = json_array();
    if (!kind || !items)
        return items;
    char prefix[256];
    if (ck__collection_prefix(kind, ns, prefix, sizeof(prefix)) < 0) {
        json_decref(items);
        return NULL;
    }
    struct ck_store_range req = {.key = prefix, .key_len = strlen(prefix), .prefix = true};
    struct ck_store_range_result res = {0};
    struct ck_err err = {0};
    if (ck_store_range(server->store, &req, &res, &err) < 0) {
        ck_err_release(&err);
        json_decref(items);
        return NULL;
    }
    for (size_t i = 0; i < res.n_kvs; i++) {
        json_t *obj = ck__decode_stored(res.kvs[i]);
        if (obj && json_array_append_new(items, obj) < 0) {
            json_decref(items);
            items = NULL;
            break;
        }
    }
    ck_store_range_result_release(&res);
    return items;
}

static json_t *list_kind(struct ck_apiserver *server, const struct ck_kind *kind)
{
    return list_kind_in(server, kind, NULL);
}

/* A new policy from the store's RBAC objects. */
static int build_policy(struct ck_apiserver *server, struct ck_rbac_policy **ret,
                        struct ck_err *reterr)
{
    json_t *roles = list_kind(server, ck_kind_with_role(CK_KIND_ROLE_RBAC_ROLE));
    json_t *cluster_roles = list_kind(server, ck_kind_with_role(CK_KIND_ROLE_RBAC_CLUSTER_ROLE));
    json_t *bindings = list_kind(server, ck_kind_with_role(CK_KIND_ROLE_RBAC_ROLE_BINDING));
    json_t *cluster_bindings =
        list_kind(server, ck_kind_with_role(CK_KIND_ROLE_RBAC_CLUSTER_ROLE_BINDING));
    int r = roles && cluster_roles && bindings && cluster_bindings
                ? ck_rbac_policy_new(roles, cluster_roles, bindings, cluster_bindings, ret, reterr)
                : ck_err_set(reterr, CK_EIO, "cannot read the RBAC objects");
    json_decref(roles);
    json_decref(cluster_roles);
    json_decref(bindings);
    json_decref(cluster_bindings);
    return r;
}

void ck__auth_rbac_changed(struct ck_apiserver *server)
{
    struct ck__auth *a = server->auth;
    if (!a)
        return;
    pthread_mutex_lock(&a->rebuild_lock);
    if (!a->authorizer) {
        /* before the first policy, which may have been read before this change: the
         * bootstrap builds it again once it is in place */
        a->missed = true;
        pthread_mutex_unlock(&a->rebuild_lock);
        return;
    }
    struct ck_rbac_policy *policy = NULL;
    struct ck_err err = {0};
    if (build_policy(server, &policy, &err) == 0)
        ck_rbac_authorizer_swap(a->authorizer, policy);
    else
        CK_LOGS(0, "Cannot rebuild the RBAC policy; keeping the previous one", "err",
                ck_err_message(&err));
    ck_err_release(&err);
    pthread_mutex_unlock(&a->rebuild_lock);
}

int ck__auth_bootstrap(struct ck_apiserver *server, struct ck_err *reterr)
{
    struct ck__auth *a = server->auth;
    if (!a)
        return 0;
    json_t *roles = NULL, *bindings = NULL;
    int r = ck_rbac_bootstrap(&roles, &bindings, reterr);
    if (r == 0)
        r = reconcile_bootstrap(server, roles, bindings, reterr);
    json_decref(roles);
    json_decref(bindings);
    /* the watches start before the policy is read: no write falls between the two */
    if (r == 0)
        publish_authentication(server);
    if (r == 0)
        r = start_following(a, reterr);
    struct ck_rbac_policy *policy = NULL;
    if (r == 0)
        r = build_policy(server, &policy, reterr);
    if (r == 0) {
        pthread_mutex_lock(&a->rebuild_lock); /* the follower thread reads it */
        a->authorizer = ck_rbac_authorizer_new(policy);
        bool missed = a->missed;
        pthread_mutex_unlock(&a->rebuild_lock);
        if (!a->authorizer) {
            ck_rbac_policy_unref(policy);
            r = ck_err_no_memory(reterr);
        }
        /*
         * A write the follower saw before now found no authorizer to rebuild: once more.
         * Only then: a rebuild reads every role and binding again (a tenth of a restart's
         * instructions), and a write the follower has not yet handled rebuilds anyway.
         */
        if (missed) {
            pthread_mutex_lock(&a->follow_lock);
            a->dirty = true;
            pthread_cond_signal(&a->follow_wake);
            pthread_mutex_unlock(&a->follow_lock);
        }
    }
    return r;
}

/*
 * What a connection remembers: whether its client certificate verified, and
 * the user it names. A TLS connection's peer certificate cannot change
 * (libmicrohttpd allows no renegotiation), so it is verified and read once,
 * at the connection's first request, not at every request. Only the thread
 * serving the connection's request touches it (one request at a time).
 */
struct conn_state {
    int peer_verified;              /* 0: not yet checked, 1: verified, -1: refused */
    int peer_kind;                  /* 0: not yet checked, else enum peer_kind's bits */
    struct ck_auth_user *cert_user; /* the certificate's user, once authenticated */
};

void *ck__auth_conn_opened(struct ck_apiserver *server)
{
    return server->auth ? ck__calloc(1, sizeof(struct conn_state)) : NULL;
}

void ck__auth_conn_closed(void *state)
{
    struct conn_state *cs = state;
    if (cs)
        ck_auth_user_free(cs->cert_user);
    free(cs);
}

static struct conn_state *conn_state_of(struct ck__req *hreq)
{
    return ck__req_conn_state(hreq);
}

/*
 * The verified client certificate of the connection (DER, borrowed from the
 * session) in *ret_der, or none. -1 when the client sent one that does not
 * verify against the client CA (or has expired).
 */
static int peer_certificate(struct ck__req *hreq, const void **ret_der, size_t *ret_len)
{
    *ret_der = NULL;
    *ret_len = 0;
    const unsigned char *der = NULL;
    size_t der_len = 0;
    if (ck__req_peer_cert(hreq, 0, &der, &der_len) == 0)
        return 0;
    struct conn_state *state = conn_state_of(hreq);
    if (!state || state->peer_verified == 0) {
        int verified = ck__req_peer_verify(hreq) ? 1 : -1;
        if (state)
            state->peer_verified = verified;
        if (verified < 0)
            return -1;
    } else if (state->peer_verified < 0) {
        return -1;
    }
    *ret_der = der;
    *ret_len = der_len;
    return 0;
}

/* What a verified client certificate is, with --requestheader-*: bits. */
enum peer_kind {
    PEER_CLIENT = 1,  /* it verifies against the client CA */
    PEER_PROXY = 2,   /* a front proxy's */
    PEER_REFUSED = 4, /* it verifies against the request-header CA, its name is not allowed */
    PEER_KNOWN = 8,
};

/* The peer_kind bits of the connection's verified certificate (read once a connection). */
static int classify_peer(struct ck__auth *a, struct ck__req *hreq)
{
    struct conn_state *state = conn_state_of(hreq);
    if (state && state->peer_kind)
        return state->peer_kind;
    const unsigned char *der = NULL;
    size_t len = 0;
    size_t count = ck__req_peer_cert(hreq, 0, &der, &len);
    gnutls_datum_t *chain = count ? ck__calloc(count, sizeof(*chain)) : NULL;
    unsigned n = 0;
    for (size_t i = 0; chain && i < count; i++) {
        ck__req_peer_cert(hreq, i, &der, &len);
        chain[n++] = (gnutls_datum_t){(unsigned char *)der, (unsigned)len};
    }
    const gnutls_datum_t *certs = chain;
    int kind = PEER_KNOWN;
    if (certs && ck__cert_chain_verifies(a->client_trust, certs, n, NULL, 0))
        kind |= PEER_CLIENT;
    enum ck__proxy_cert proxy =
        certs ? ck__requestheader_check(a->requestheader, certs, n) : CK__PROXY_CERT_NO;
    kind |= proxy == CK__PROXY_CERT_YES       ? PEER_PROXY
            : proxy == CK__PROXY_CERT_REFUSED ? PEER_REFUSED
                                              : 0;
    bool read = chain || !count; /* without memory for the chain, it is read again */
    free(chain);
    if (state && read)
        state->peer_kind = kind;
    return kind;
}

struct header_list {
    struct ck__header *items;
    size_t n, cap;
};

static bool collect_header(void *cls, const char *key, const char *value)
{
    struct header_list *l = cls;
    if (l->n < l->cap)
        l->items[l->n++] = (struct ck__header){key, value ? value : ""};
    return true;
}

/* The user a front proxy's headers name, or NULL (none named). 0 or CK_ENOMEM. */
static int proxy_user(struct ck__auth *a, struct ck__req *hreq, struct ck_auth_user **ret)
{
    struct header_list l = {.cap = ck__req_headers(hreq, NULL, NULL)};
    if (l.cap && !(l.items = ck__calloc(l.cap, sizeof(*l.items))))
        return CK_ENOMEM;
    ck__req_headers(hreq, collect_header, &l);
    int r = ck__requestheader_user(a->requestheader, l.items, l.n, ret);
    free(l.items);
    return r;
}

/* Kubernetes' RequestInfo verb of a resource request. */
static const char *resource_verb(struct ck__req *hreq, const char *method, const char *name,
                                 const char *subresource)
{
    bool named = name[0] != '\0';
    /* a WebSocket exec, attach or port-forward is a GET: authorized as the create kubectl's
       roles grant */
    if ((strcmp(subresource, "exec") == 0 || strcmp(subresource, "attach") == 0 ||
         strcmp(subresource, "portforward") == 0) &&
        strcmp(method, "GET") == 0)
        return "create";
    /* a proxied request's query is the upstream's: the verb is its method's */
    bool proxy = strcmp(subresource, "proxy") == 0;
    if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) {
        if (!proxy && ck__query_bool(hreq, "watch"))
            return "watch";
        return named ? "get" : "list";
    }
    if (strcmp(method, "POST") == 0)
        return "create";
    if (strcmp(method, "PUT") == 0)
        return "update";
    if (strcmp(method, "PATCH") == 0)
        return "patch";
    if (strcmp(method, "DELETE") == 0)
        return named ? "delete" : "deletecollection";
    return "";
}

const char *ck__request_verb(struct ck__req *hreq, const char *method, const struct ck__target *t)
{
    return resource_verb(hreq, method, t->name, t->subresource);
}

enum ck__res ck__auth_authenticate(struct ck_apiserver *server, struct ck__req *hreq,
                                   struct ck_auth_user **ret_user, bool *ret_answered)
{
    struct ck__auth *a = server->auth;
    *ret_answered = false;
    *ret_user = NULL;
    if (!a)
        return CK__YES;

    struct ck_auth_credentials creds = {
        .authorization = ck__req_header(hreq, "Authorization"),
        .now = (long long)time(NULL),
    };
    struct ck_err err = {0};
    struct ck_auth_user *user = NULL;
    int r = peer_certificate(hreq, &creds.peer_cert_der, &creds.peer_cert_len) < 0
                ? ck_err_set(&err, CK_EPERM, "the client certificate does not verify")
                : 0;
    /*
     * With --requestheader-*, Kubernetes' union: a front proxy's certificate names the
     * user in headers; without a username header, or from another client, they are
     * not read. A certificate only the request-header CA signed is no client identity.
     */
    int kind =
        r == 0 && creds.peer_cert_der && a->requestheader ? classify_peer(a, hreq) : PEER_CLIENT;
    if ((kind & PEER_PROXY) && (r = proxy_user(a, hreq, &user)) < 0)
        r = ck_err_no_memory(&err);
    if (r == 0 && !user && !(kind & PEER_CLIENT)) {
        creds.peer_cert_der = NULL;
        creds.peer_cert_len = 0;
        if (!creds.authorization)
            r = ck_err_set(&err, CK_EPERM, "%s",
                           kind & PEER_REFUSED ? "the client certificate's name is not allowed"
                                               : "x509: certificate signed by unknown authority");
    }
    struct conn_state *state = creds.peer_cert_der ? conn_state_of(hreq) : NULL;
    if (r < 0 || user) {
        /* a front proxy's user, or a failure */
    } else if (state && state->cert_user) { /* this connection's certificate, read before */
        user = ck_auth_user_copy(state->cert_user);
        r = user ? 0 : ck_err_no_memory(&err);
    } else {
        r = ck_auth_authenticate(&a->config, &creds, &user, &err);
        if (r == 0 && state) /* without memory to keep it, it is read again next time */
            state->cert_user = ck_auth_user_copy(user);
    }
    if (r < 0) {
        *ret_answered = true;
        if (r == CK_ENOMEM) {
            ck_err_release(&err);
            return ck__fail_no_memory(hreq);
        }
        CK_LOGV(2, "Unable to authenticate the request: %s", ck_err_message(&err));
        ck_err_release(&err);
        return ck__fail_with(hreq, "Unauthorized", "Unauthorized");
    }
    if (impersonate(a, hreq, &user, &err) < 0) {
        *ret_answered = true;
        CK_LOGV(2, "Impersonation refused: %s", ck_err_message(&err));
        ck_auth_user_free(user);
        return ck__fail(hreq, &err);
    }
    *ret_user = user;
    return CK__YES;
}

/* A resource request's attributes from its target (RequestInfo). */
static void target_request(struct ck_rbac_request *req, const char *verb,
                           const struct ck__target *t)
{
    req->is_resource_request = true;
    req->verb = verb;
    req->api_group = t->kind->group;
    req->resource = t->kind->resource;
    req->subresource = t->subresource;
    req->name = t->name;
    req->namespace = t->namespace;
    /* a namespace's own requests are in that namespace (RequestInfo) */
    if (t->kind->role == CK_KIND_ROLE_NAMESPACE && t->name[0])
        req->namespace = t->name;
}

/*
 * RBAC's decision on req, then the node authorizer's on a node's Secrets and
 * ConfigMaps (role: the kind's, CK_KIND_ROLE_NONE for other requests): 0 when
 * allowed, else CK_EPERM with the 403 Forbidden Status in *err.
 */
static int decide(struct ck_apiserver *server, const struct ck_rbac_request *req,
                  enum ck_kind_role role, struct ck_err *err)
{
    const struct ck_auth_user *user = req->user;
    struct ck_rbac_policy *policy = ck_rbac_authorizer_current(server->auth->authorizer);
    char reason[512] = "";
    enum ck_rbac_decision d =
        policy ? ck_rbac_authorize(policy, req, reason, sizeof(reason)) : CK_RBAC_NO_OPINION;
    ck_rbac_policy_unref(policy);
    /*
     * A node's Secrets and ConfigMaps are the node authorizer's alone: the ones
     * its pods reference, by name (Kubernetes leaves the system:node role,
     * which grants them all, unbound; ckube binds it to system:nodes).
     */
    const char *node = ck__auth_node_name(user);
    if (node && (role == CK_KIND_ROLE_SECRET || role == CK_KIND_ROLE_CONFIG_MAP)) {
        d = node_may_read(server, node, req, role == CK_KIND_ROLE_SECRET) ? CK_RBAC_ALLOW
                                                                          : CK_RBAC_NO_OPINION;
        if (d != CK_RBAC_ALLOW)
            snprintf(reason, sizeof(reason),
                     "no relationship found between node '%s' and this object", node);
    }
    if (d == CK_RBAC_ALLOW)
        return 0;
    int r = ck_rbac_forbidden(err, req, reason);
    CK_LOGV(2, "Forbidden: %s", ck_err_message(err));
    return r;
}

int ck__auth_authorize_target(struct ck_apiserver *server, const struct ck_auth_user *user,
                              const char *verb, const struct ck__target *t, struct ck_err *err)
{
    if (!server->auth || ck_auth_user_in_group(user, CK_AUTH_MASTERS))
        return 0;
    struct ck_rbac_request req = {.user = user};
    target_request(&req, verb, t);
    return decide(server, &req, t->kind->role, err);
}

enum ck__res ck__auth_authorize(struct ck_apiserver *server, struct ck__req *hreq,
                                const char *method, const char *url,
                                const struct ck_auth_user *user, bool *ret_answered)
{
    *ret_answered = false;
    if (!server->auth || ck_auth_user_in_group(user, CK_AUTH_MASTERS))
        return CK__YES;
    struct ck_err err = {0};
    struct ck_rbac_request req = {.user = user};
    struct ck__target target;
    struct ck__aggregated_request aggregated;
    char verb[16];
    bool routed = ck__route(url, &target) == 0;
    if (routed) {
        target_request(&req, ck__request_verb(hreq, method, &target), &target);
    } else if (ck__aggregated_path(url, &aggregated) == 0 && aggregated.resource[0]) {
        /* an APIService's resource: the attributes its path gives (RequestInfoFactory) */
        req.is_resource_request = true;
        req.verb = resource_verb(hreq, method, aggregated.name, aggregated.subresource);
        req.api_group = aggregated.group;
        req.resource = aggregated.resource;
        req.subresource = aggregated.subresource;
        req.name = aggregated.name;
        req.namespace = aggregated.namespace;
    } else {
        size_t i = 0;
        for (; method[i] && i + 1 < sizeof(verb); i++)
            verb[i] =
                (char)(method[i] >= 'A' && method[i] <= 'Z' ? method[i] - 'A' + 'a' : method[i]);
        verb[i] = '\0';
        req.verb = verb;
        req.path = url;
    }
    if (decide(server, &req, routed ? target.kind->role : CK_KIND_ROLE_NONE, &err) == 0)
        return CK__YES;
    *ret_answered = true;
    return ck__fail(hreq, &err);
}

/*
 * What a PATCH would make of the object: the patch applied to the stored
 * object now (the registry applies it again to whatever it finds when it
 * commits). NULL when there is nothing to check: no such object, a patch
 * that does not apply; the handler then answers those.
 */
static json_t *patched_object(struct ck_apiserver *server, const struct ck__target *t,
                              const char *content_type, const char *body, size_t len)
{
    const struct ck_kv *kv = NULL;
    struct ck_err err = {0};
    if (ck__registry_get(server->registry, t->kind, t->namespace, t->name, &kv, &err) < 0) {
        ck_err_release(&err);
        return NULL;
    }
    json_t *current = ck__decode_stored(kv);
    ck_kv_unref(kv);
    struct ck__patch patch;
    json_t *obj = NULL;
    if (current && ck__patch_init(&patch, ck_kind_schemas(t->kind, server->schemas), t->kind,
                                  content_type, body, len, &err) == 0) {
        obj = ck__patch_mutate(current, &patch, &err);
        ck__patch_release(&patch);
    }
    ck_err_release(&err);
    json_decref(current);
    return obj;
}

int ck__auth_check_write(struct ck_apiserver *server, const struct ck_auth_user *user,
                         const struct ck__target *t, const char *method, const char *content_type,
                         const char *body, size_t len, struct ck_err *reterr)
{
    struct ck__auth *a = server->auth;
    enum ck_kind_role role = t->kind->role;
    if (!a || !user || t->subresource[0] ||
        (role != CK_KIND_ROLE_RBAC_ROLE && role != CK_KIND_ROLE_RBAC_CLUSTER_ROLE &&
         role != CK_KIND_ROLE_RBAC_ROLE_BINDING && role != CK_KIND_ROLE_RBAC_CLUSTER_ROLE_BINDING))
        return 0;
    if (ck_auth_user_in_group(user, CK_AUTH_MASTERS))
        return 0;
    bool patch = strcmp(method, "PATCH") == 0;
    if (!patch && strcmp(method, "POST") != 0 && strcmp(method, "PUT") != 0)
        return 0;
    json_t *obj = !body   ? NULL
                  : patch ? patched_object(server, t, content_type, body, len)
                          : json_loadb(body, len, 0, NULL);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return 0; /* the handler answers the malformed body */
    }
    const char *ns = t->namespace[0] ? t->namespace : NULL;
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    if (!name)
        name = t->name;
    struct ck_rbac_policy *policy = ck_rbac_authorizer_current(a->authorizer);
    struct ck_err err = {0};
    int r;
    if (role == CK_KIND_ROLE_RBAC_ROLE || role == CK_KIND_ROLE_RBAC_CLUSTER_ROLE) {
        json_t *rules = json_object_get(obj, "rules");
        json_t *empty = rules ? NULL : json_array();
        r = ck_rbac_check_role_write(policy, user, ns, name, rules ? rules : empty, &err);
        json_decref(empty);
    } else {
        const json_t *ref = json_object_get(obj, "roleRef");
        r = ref ? ck_rbac_check_binding_write(policy, user, ns, ref, &err) : 0;
    }
    ck_rbac_policy_unref(policy);
    if (r == CK_EPERM) {
        /* kube-apiserver's wording: `rolebindings.rbac.authorization.k8s.io "x" is forbidden: ...`
         */
        r = ck_err_status(reterr, "Forbidden", "%s.%s \"%s\" is forbidden: %s", t->kind->resource,
                          t->kind->group, name, ck_err_message(&err));
        ck_err_set_details(reterr, t->kind->group, t->kind->resource, name);
    } else if (r == CK_ENOMEM) {
        r = ck_err_no_memory(reterr);
    } else {
        r = 0; /* a missing role or a malformed roleRef: the object's validation answers */
    }
    ck_err_release(&err);
    json_decref(obj);
    return r;
}

int ck_apiserver_component_credentials(const struct ck_apiserver *server, const char *file_base,
                                       const char *cn, const char *org, char **ret_ca,
                                       char **ret_cert, char **ret_key, struct ck_err *reterr)
{
    const struct ck__auth *a = server->auth;
    /* the generated CA signs it; the admin certificate exists exactly then */
    if (!a || !a->pki_dir || !a->pki.admin_cert)
        return ck_err_set(reterr, CK_ENOENT, "no generated CA to sign a %s certificate with", cn);
    struct ck_pki_options opts = {.dir = a->pki_dir};
    const char *orgs[1] = {org};
    int r = ck_pki_client_cert(&opts, file_base, cn, orgs, org ? 1 : 0, reterr);
    if (r < 0)
        return r;
    size_t n = strlen(a->pki_dir) + strlen(file_base) + 8;
    /* a serving certificate of the user's own: the client pins it (a leaf is a trust anchor) */
    *ret_ca = ck__strdup(a->pki.ca_cert ? a->pki.ca_cert : a->pki.server_cert);
    *ret_cert = ck__malloc(n);
    *ret_key = ck__malloc(n);
    if (!*ret_ca || !*ret_cert || !*ret_key) {
        free(*ret_ca);
        free(*ret_cert);
        free(*ret_key);
        *ret_ca = *ret_cert = *ret_key = NULL;
        return ck_err_no_memory(reterr);
    }
    snprintf(*ret_cert, n, "%s/%s.crt", a->pki_dir, file_base);
    snprintf(*ret_key, n, "%s/%s.key", a->pki_dir, file_base);
    return 0;
}

/* ---- ServiceAccount tokens: the account and the pod must still exist ---------- */

/* The stored object kind/ns/name as a new reference, or NULL (absent: CK_ENOENT in *ret_code). */
static json_t *stored_object(struct ck_apiserver *server, const struct ck_kind *kind,
                             const char *ns, const char *name, int *ret_code)
{
    const struct ck_kv *kv = NULL;
    struct ck_err err = {0};
    *ret_code = 0;
    if (!kind || ck__registry_get(server->registry, kind, ns, name, &kv, &err) < 0) {
        *ret_code = !kind || err.http_status == 404 ? CK_ENOENT : err.code;
        ck_err_release(&err);
        return NULL;
    }
    json_t *obj = ck__decode_stored(kv);
    ck_kv_unref(kv);
    if (!obj)
        *ret_code = CK_ENOMEM;
    return obj;
}

static const char *claim(const json_t *obj, const char *a, const char *b)
{
    const json_t *v = json_object_get(obj, a);
    return json_string_value(b ? json_object_get(v, b) : v);
}

/*
 * kube-apiserver's validator of bound tokens: the service account the
 * claims name must exist with the claimed uid and not be being deleted, and
 * so must the pod the token is bound to.
 */
static int validate_sa_claims(void *arg, const json_t *claims, struct ck_err *reterr)
{
    struct ck_apiserver *server = arg;
    const json_t *k8s = json_object_get(claims, "kubernetes.io");
    const char *ns = claim(k8s, "namespace", NULL);
    const json_t *sa_ref = json_object_get(k8s, "serviceaccount");
    const char *name = claim(sa_ref, "name", NULL), *uid = claim(sa_ref, "uid", NULL);
    if (!ns || !name)
        return ck_err_set(reterr, CK_EPERM, "the token names no service account");
    int code;
    json_t *sa =
        stored_object(server, ck_kind_with_role(CK_KIND_ROLE_SERVICE_ACCOUNT), ns, name, &code);
    if (!sa)
        return code == CK_ENOMEM ? ck_err_no_memory(reterr)
                                 : ck_err_set(reterr, CK_EPERM,
                                              "service account %s/%s has been deleted", ns, name);
    const json_t *meta = json_object_get(sa, "metadata");
    const char *sa_uid = claim(meta, "uid", NULL);
    int r = 0;
    if (uid && *uid && (!sa_uid || strcmp(sa_uid, uid) != 0))
        r = ck_err_set(reterr, CK_EPERM, "service account UID (%s) does not match claim (%s)",
                       sa_uid ? sa_uid : "", uid);
    else if (json_object_get(meta, "deletionTimestamp"))
        r = ck_err_set(reterr, CK_EPERM, "service account %s/%s has been deleted", ns, name);
    json_decref(sa);
    const json_t *pod_ref = json_object_get(k8s, "pod");
    if (r < 0 || !pod_ref)
        return r;
    const char *pod_name = claim(pod_ref, "name", NULL), *pod_uid = claim(pod_ref, "uid", NULL);
    json_t *pod =
        pod_name ? stored_object(server, ck_kind_with_role(CK_KIND_ROLE_POD), ns, pod_name, &code)
                 : NULL;
    if (!pod)
        return code == CK_ENOMEM ? ck_err_no_memory(reterr)
                                 : ck_err_set(reterr, CK_EPERM, "pod %s/%s has been deleted", ns,
                                              pod_name ? pod_name : "");
    meta = json_object_get(pod, "metadata");
    const char *live_uid = claim(meta, "uid", NULL);
    if (pod_uid && *pod_uid && (!live_uid || strcmp(live_uid, pod_uid) != 0))
        r = ck_err_set(reterr, CK_EPERM, "pod UID (%s) does not match claim (%s)",
                       live_uid ? live_uid : "", pod_uid);
    else if (json_object_get(meta, "deletionTimestamp"))
        r = ck_err_set(reterr, CK_EPERM, "pod %s/%s has been deleted", ns, pod_name);
    json_decref(pod);
    return r;
}

/* The Secret a bootstrap token names: kube-system/bootstrap-token-ID, or NULL. */
static json_t *bootstrap_secret(void *arg, const char *token_id)
{
    char name[64];
    int code = 0;
    snprintf(name, sizeof(name), "bootstrap-token-%s", token_id);
    return stored_object(arg, ck_kind_with_role(CK_KIND_ROLE_SECRET), "kube-system", name, &code);
}

/* ---- impersonation ------------------------------------------------------------ */

#define IMPERSONATE_USER   "Impersonate-User"
#define IMPERSONATE_UID    "Impersonate-Uid"
#define IMPERSONATE_GROUP  "Impersonate-Group"
#define IMPERSONATE_EXTRA_ "Impersonate-Extra-"

/* The Impersonate-* headers of one request. */
struct impersonation {
    const char *user, *uid;
    json_t *groups; /* strings */
    json_t *extra;  /* {key: [values]}, keys lower-cased and unescaped */
    bool nomem;
};

static bool collect_impersonation(void *cls, const char *key, const char *value)
{
    struct impersonation *imp = cls;
    if (!key || !value)
        return true;
    if (strcasecmp(key, IMPERSONATE_USER) == 0) {
        imp->user = value;
    } else if (strcasecmp(key, IMPERSONATE_UID) == 0) {
        imp->uid = value;
    } else if (strcasecmp(key, IMPERSONATE_GROUP) == 0) {
        imp->nomem |= json_array_append_new(imp->groups, json_string(value)) < 0;
    } else if (strncasecmp(key, IMPERSONATE_EXTRA_, strlen(IMPERSONATE_EXTRA_)) == 0) {
        /* the key is lower-cased, then percent-decoded (Kubernetes' unescapeExtraKey) */
        char *extra_key = ck__strdup(key + strlen(IMPERSONATE_EXTRA_));
        if (!extra_key) {
            imp->nomem = true;
            return true;
        }
        for (char *p = extra_key; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        MHD_http_unescape(extra_key);
        json_t *values = json_object_get(imp->extra, extra_key);
        if (!values) {
            values = json_array();
            imp->nomem |= json_object_set_new(imp->extra, extra_key, values) < 0;
        }
        imp->nomem |= json_array_append_new(values, json_string(value)) < 0;
        free(extra_key);
    }
    return true;
}

/*
 * May requester impersonate the object the attributes name? Allowed: 0.
 * Denied: fills err with the 403 kube-apiserver answers (the attributes
 * and the requester, as every forbidden message) and returns CK_EPERM.
 */
static int may_impersonate(const struct ck_rbac_policy *policy,
                           const struct ck_auth_user *requester, const char *group,
                           const char *resource, const char *subresource, const char *ns,
                           const char *name, struct ck_err *err)
{
    if (ck_auth_user_in_group(requester, CK_AUTH_MASTERS))
        return 0;
    struct ck_rbac_request req = {
        .user = requester,
        .verb = "impersonate",
        .is_resource_request = true,
        .api_group = group,
        .resource = resource,
        .subresource = subresource,
        .name = name,
        .namespace = ns,
    };
    char reason[512] = "";
    if (policy && ck_rbac_authorize(policy, &req, reason, sizeof(reason)) == CK_RBAC_ALLOW)
        return 0;
    ck_rbac_forbidden(err, &req, reason);
    return CK_EPERM;
}

/*
 * Kubernetes' impersonation filter. Without Impersonate-* headers *user is
 * left alone. Otherwise every impersonated part is authorized with the verb
 * impersonate (users or serviceaccounts, groups, userextras/<key>, uids) for
 * the authenticated requester, and *user is replaced by the impersonated
 * user (system:authenticated added unless it is system:anonymous, which gets
 * system:unauthenticated). Fails with err filled: 403 for a denial, 500
 * (as Kubernetes answers) for groups, uid or extra without a user.
 */
static int impersonate(struct ck__auth *a, struct ck__req *hreq, struct ck_auth_user **user,
                       struct ck_err *err)
{
    struct impersonation imp = {.groups = json_array(), .extra = json_object()};
    if (!imp.groups || !imp.extra) {
        json_decref(imp.groups);
        json_decref(imp.extra);
        return ck_err_no_memory(err);
    }
    ck__req_headers(hreq, collect_impersonation, &imp);
    int r = 0;
    bool others = imp.uid || json_array_size(imp.groups) || json_object_size(imp.extra);
    if (imp.nomem) {
        r = ck_err_no_memory(err);
    } else if (!imp.user && others) {
        /* Kubernetes prints the requests as Go values; this names what was asked */
        bool groups = json_array_size(imp.groups) > 0, extra = json_object_size(imp.extra) > 0;
        r = ck_err_internal(err, "requested [%s%s%s%s%s] without impersonating a user",
                            groups ? "groups" : "", groups && (extra || imp.uid) ? " " : "",
                            extra ? "extra" : "", extra && imp.uid ? " " : "",
                            imp.uid ? "uid" : "");
    }
    if (r < 0 || !imp.user)
        goto out;

    struct ck_rbac_policy *policy = ck_rbac_authorizer_current(a->authorizer);
    const struct ck_auth_user *requester = *user;
    struct ck_auth_user *as = NULL;
    char sa_ns[256] = "", sa_name[256] = "";
    size_t prefix = strlen(CK_AUTH_SERVICEACCOUNT_USER);
    const char *colon = strncmp(imp.user, CK_AUTH_SERVICEACCOUNT_USER, prefix) == 0
                            ? strchr(imp.user + prefix, ':')
                            : NULL;
    size_t ns_len = colon ? (size_t)(colon - (imp.user + prefix)) : 0;
    if (colon && ns_len < sizeof(sa_ns) && colon[1]) {
        snprintf(sa_ns, sizeof(sa_ns), "%.*s", (int)ns_len, imp.user + prefix);
        snprintf(sa_name, sizeof(sa_name), "%s", colon + 1);
        r = may_impersonate(policy, requester, "", "serviceaccounts", NULL, sa_ns, sa_name, err);
    } else {
        r = may_impersonate(policy, requester, "", "users", NULL, NULL, imp.user, err);
    }
    size_t i;
    json_t *v;
    json_array_foreach(imp.groups, i, v)
    {
        if (r == 0)
            r = may_impersonate(policy, requester, "", "groups", NULL, NULL, json_string_value(v),
                                err);
    }
    const char *key;
    json_t *values;
    json_object_foreach(imp.extra, key, values)
    {
        json_array_foreach(values, i, v)
        {
            if (r == 0)
                r = may_impersonate(policy, requester, "authentication.k8s.io", "userextras", key,
                                    NULL, json_string_value(v), err);
        }
    }
    if (r == 0 && imp.uid)
        r = may_impersonate(policy, requester, "authentication.k8s.io", "uids", NULL, NULL, imp.uid,
                            err);
    ck_rbac_policy_unref(policy);
    if (r < 0)
        goto out;

    as = ck_auth_user_new(imp.user, imp.uid ? imp.uid : "");
    bool failed = !as;
    json_array_foreach(imp.groups, i, v) failed =
        failed || ck_auth_user_add_group(as, json_string_value(v)) < 0;
    if (sa_name[0] && json_array_size(imp.groups) == 0) {
        char group[300];
        snprintf(group, sizeof(group), "%s:%s", CK_AUTH_SERVICEACCOUNTS, sa_ns);
        failed = failed || ck_auth_user_add_group(as, CK_AUTH_SERVICEACCOUNTS) < 0 ||
                 ck_auth_user_add_group(as, group) < 0;
    }
    json_object_foreach(imp.extra, key, values)
    {
        json_array_foreach(values, i, v) failed =
            failed || ck_auth_user_add_extra(as, key, json_string_value(v)) < 0;
    }
    if (!failed && strcmp(imp.user, CK_AUTH_ANONYMOUS_USER) == 0)
        failed = ck_auth_user_add_group(as, CK_AUTH_UNAUTHENTICATED) < 0;
    else if (!failed)
        failed = ck_auth_mark_authenticated(as) < 0;
    if (failed) {
        ck_auth_user_free(as);
        r = ck_err_no_memory(err);
        goto out;
    }
    CK_LOGV(4, "%s impersonates %s", requester->name, as->name);
    ck_auth_user_free(*user);
    *user = as;
out:
    json_decref(imp.groups);
    json_decref(imp.extra);
    return r;
}

/* ---- TokenRequest and the reviews: answered here, never stored ------------------ */

/*
 * The body decoded as schema (Kind kind_name, version v1), as any create
 * decodes it: JSON, YAML or protobuf (kubectl's), unknown fields per
 * fieldValidation (ignored in protobuf, as Kubernetes). NULL with err filled.
 */
static json_t *decode_review(struct ck_apiserver *server, struct ck__req *hreq, const char *schema,
                             const char *kind_name, const char *body, size_t len,
                             struct ck_err *err)
{
    const char *type = ck__req_header(hreq, "Content-Type");
    bool proto = ck__is_proto_media_type(type);
    char *converted = NULL; /* the body as JSON, when it came in another format */
    size_t converted_len = 0;
    if (proto) {
        struct ck_err perr = {0};
        if (ck__proto_body_to_json(schema, body, len, &converted, &converted_len, &perr) < 0) {
            ck_err_status(err, perr.http_status == 400 ? "BadRequest" : "InternalError",
                          "%s in version \"v1\" cannot be handled as a %s: %s", kind_name,
                          kind_name, ck_err_message(&perr));
            ck_err_release(&perr);
            return NULL;
        }
    } else if (!ck__codec_for_content_type(type)) {
        ck__err_unsupported_media_for(err, true);
        return NULL;
    } else if (ck__media_decode_body(hreq, NULL, body, len, &converted, &converted_len, err) < 0) {
        return NULL;
    }
    if (converted) {
        body = converted;
        len = converted_len;
    }
    enum ck_field_validation fv;
    if (ck_field_validation_parse(ck__query(hreq, "fieldValidation"), &fv) < 0) {
        ck_err_status(err, "BadRequest", "fieldValidation must be one of Strict, Warn or Ignore");
        free(converted);
        return NULL;
    }
    if (proto)
        fv = CK_FIELD_VALIDATION_IGNORE;
    json_t *obj = NULL;
    struct ck_err derr = {0};
    int r = ck_schema_decode(server->schemas, schema, body ? body : "", len, fv, &obj, NULL, &derr);
    free(converted);
    if (r < 0) {
        if (r == CK_ENOMEM)
            ck_err_no_memory(err);
        else
            ck_err_status(err, "BadRequest", "%s in version \"v1\" cannot be handled as a %s: %s",
                          kind_name, kind_name, derr.msg);
        ck_err_release(&derr);
        return NULL;
    }
    const char *body_kind = json_string_value(json_object_get(obj, "kind"));
    if (body_kind && *body_kind && strcmp(body_kind, kind_name) != 0) {
        ck_err_status(err, "BadRequest",
                      "the kind in the data (%s) does not match the expected kind (%s)", body_kind,
                      kind_name);
        json_decref(obj);
        return NULL;
    }
    return obj;
}

/* Sets apiVersion, kind and an empty metadata's creationTimestamp, as Go serialises them. */
static int dress(json_t *obj, const char *api_version, const char *kind)
{
    json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_object(meta)) {
        meta = json_object();
        if (json_object_set_new(obj, "metadata", meta) < 0)
            return CK_ENOMEM;
    }
    if (!json_object_get(meta, "creationTimestamp") &&
        json_object_set_new(meta, "creationTimestamp", json_null()) < 0)
        return CK_ENOMEM;
    if (json_object_set_new(obj, "kind", json_string(kind)) < 0 ||
        json_object_set_new(obj, "apiVersion", json_string(api_version)) < 0)
        return CK_ENOMEM;
    return 0;
}

static enum ck__res send_created(struct ck__req *hreq, json_t *obj)
{
    size_t len = 0;
    char *text = ck__json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER, &len);
    json_decref(obj);
    if (!text)
        return ck__fail_no_memory(hreq);
    if (ck__negotiate(hreq) == CK__ACCEPT_PROTOBUF) /* every review kind has a message */
        return ck__send_proto(hreq, 201, text, len, NULL);
    return ck__send_bytes(hreq, 201, "application/json", text, len, NULL);
}

json_t *ck__auth_user_info(const struct ck_auth_user *user)
{
    json_t *groups = json_array();
    for (size_t i = 0; groups && i < user->n_groups; i++)
        if (json_array_append_new(groups, json_string(user->groups[i])) < 0)
            groups = (json_decref(groups), NULL);
    if (!groups)
        return NULL;
    json_t *info = json_pack("{s:s, s:o}", "username", user->name, "groups", groups);
    if (info && user->uid && *user->uid && json_object_set_new(info, "uid", json_string(user->uid)))
        info = (json_decref(info), NULL);
    if (info && json_object_size(user->extra) &&
        json_object_set_new(info, "extra", ck__json_copy(user->extra)) < 0)
        info = (json_decref(info), NULL);
    return info;
}

/* POST serviceaccounts/NAME/token: a bound token for the account, as TokenRequest issues it. */
static enum ck__res serve_token_request(struct ck_apiserver *server, struct ck__req *hreq,
                                        const struct ck__target *t, const char *body, size_t len)
{
    struct ck__auth *a = server->auth;
    struct ck_err err = {0};
    json_t *req = decode_review(server, hreq, "io.k8s.api.authentication.v1.TokenRequest",
                                "TokenRequest", body, len, &err);
    if (!req)
        return ck__fail(hreq, &err);
    /* a create on serviceaccounts/token: admission sees it (NodeRestriction narrows nodes) */
    struct ck__admission_attrs attrs = {.op = CK__ADMISSION_CREATE,
                                        .kind = t->kind,
                                        .subresource = t->subresource,
                                        .namespace = t->namespace,
                                        .name = t->name,
                                        .obj = req,
                                        .dry_run = ck__query(hreq, "dryRun") != NULL,
                                        .user = t->user};
    if (ck__admission_admit(server->registry, &attrs, &err) < 0 ||
        ck__admission_validate(server->registry, &attrs, &err) < 0) {
        json_decref(req);
        return ck__fail(hreq, &err);
    }
    json_t *spec = json_object_get(req, "spec");
    json_t *exp_json = json_object_get(spec, "expirationSeconds");
    long long expiration = json_is_integer(exp_json) ? json_integer_value(exp_json) : 3600;
    struct ck_field_errors errs = {0};
    char value[32];
    snprintf(value, sizeof(value), "%lld", expiration);
    if (expiration < 600)
        ck_field_errors_add(&errs, CK_FIELD_INVALID, "spec.expirationSeconds", value, false,
                            "may not specify a duration less than 10 minutes");
    if (expiration > (1LL << 32))
        ck_field_errors_add(&errs, CK_FIELD_INVALID, "spec.expirationSeconds", value, false,
                            "may not specify a duration larger than 2^32 seconds");
    if (errs.len || errs.nomem) {
        ck__err_invalid(&err, "authentication.k8s.io", "TokenRequest", t->name, &errs);
        ck_field_errors_release(&errs);
        json_decref(req);
        return ck__fail(hreq, &err);
    }
    const struct ck_kind *pod_kind = ck_kind_with_role(CK_KIND_ROLE_POD);
    json_t *sa = NULL, *pod = NULL;
    const struct ck_kv *kv = NULL;
    if (ck__registry_get(server->registry, t->kind, t->namespace, t->name, &kv, &err) < 0)
        goto fail;
    sa = ck__decode_stored(kv);
    ck_kv_unref(kv);
    if (!sa) {
        ck_err_no_memory(&err);
        goto fail;
    }
    json_t *ref = json_object_get(spec, "boundObjectRef");
    if (ref) {
        const char *ref_kind = claim(ref, "kind", NULL), *ref_api = claim(ref, "apiVersion", NULL);
        const char *ref_name = claim(ref, "name", NULL), *ref_uid = claim(ref, "uid", NULL);
        if (!ref_kind || strcmp(ref_kind, "Pod") != 0 || (ref_api && strcmp(ref_api, "v1") != 0)) {
            ck_err_status(&err, "BadRequest", "cannot bind token to object of type %s, Kind=%s",
                          ref_api && *ref_api ? ref_api : "/", ref_kind ? ref_kind : "");
            goto fail;
        }
        if (ck__registry_get(server->registry, pod_kind, t->namespace, ref_name ? ref_name : "",
                             &kv, &err) < 0)
            goto fail;
        pod = ck__decode_stored(kv);
        ck_kv_unref(kv);
        if (!pod) {
            ck_err_no_memory(&err);
            goto fail;
        }
        const char *pod_sa = claim(json_object_get(pod, "spec"), "serviceAccountName", NULL);
        if (!pod_sa || strcmp(pod_sa, t->name) != 0) {
            ck_err_status(
                &err, "BadRequest",
                "cannot bind token for serviceaccount \"%s\" to pod running with different serviceaccount name.",
                t->name);
            goto fail;
        }
        const char *pod_uid = claim(pod, "metadata", "uid");
        if (ref_uid && *ref_uid && (!pod_uid || strcmp(pod_uid, ref_uid) != 0)) {
            char why[256];
            snprintf(
                why, sizeof(why),
                "the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated",
                ref_uid);
            ck_err_conflict(&err, "", "Pod", ref_name, why);
            goto fail;
        }
    }
    json_t *auds = json_object_get(spec, "audiences");
    if (json_array_size(auds) == 0) {
        auds = json_array();
        for (size_t i = 0; auds && i < (a->config.n_api_audiences ? a->config.n_api_audiences : 1);
             i++)
            json_array_append_new(auds,
                                  json_string(a->config.n_api_audiences ? a->config.api_audiences[i]
                                                                        : a->config.sa_issuer));
        if (!auds || json_object_set_new(spec, "audiences", auds) < 0) {
            ck_err_no_memory(&err);
            goto fail;
        }
    }
    const char **aud_list = ck__calloc(json_array_size(auds) + 1, sizeof(*aud_list));
    if (!aud_list) {
        ck_err_no_memory(&err);
        goto fail;
    }
    for (size_t i = 0; i < json_array_size(auds); i++)
        aud_list[i] = json_string_value(json_array_get(auds, i));
    long long now = (long long)time(NULL);
    struct ck_auth_token_request tr = {
        .issuer = a->config.sa_issuer,
        .namespace = t->namespace,
        .sa_name = t->name,
        .sa_uid = claim(sa, "metadata", "uid"),
        .audiences = aud_list,
        .n_audiences = json_array_size(auds),
        .now = now,
        .expiration_seconds = expiration,
        .pod_name = pod ? claim(pod, "metadata", "name") : NULL,
        .pod_uid = pod ? claim(pod, "metadata", "uid") : NULL,
    };
    char *token = NULL;
    struct ck_err sign_err = {0};
    int r = a->sa_key ? ck_auth_jwt_sign(a->sa_key, &tr, &token, &sign_err)
                      : ck_err_set(&sign_err, CK_ENOENT, "no service-account signing key");
    free(aud_list);
    if (r < 0) {
        ck_err_internal(&err, "failed to generate token: %s", sign_err.msg);
        ck_err_release(&sign_err);
        goto fail;
    }
    if (ref && pod && !json_object_get(ref, "uid"))
        json_object_set_new(ref, "uid", json_string(claim(pod, "metadata", "uid")));
    char expiry[64];
    json_t *meta = json_object_get(req, "metadata");
    if (!json_is_object(meta))
        json_object_set_new(req, "metadata", meta = json_object());
    char created[64];
    if (json_object_set_new(meta, "name", json_string(t->name)) < 0 ||
        json_object_set_new(meta, "namespace", json_string(t->namespace)) < 0 ||
        json_object_set_new(meta, "creationTimestamp",
                            json_string(ck_rfc3339(now, created, sizeof(created)))) < 0 ||
        json_object_set_new(spec, "expirationSeconds", json_integer(expiration)) < 0 ||
        json_object_set_new(req, "status",
                            json_pack("{s:s, s:s}", "token", token, "expirationTimestamp",
                                      ck_rfc3339(now + expiration, expiry, sizeof(expiry)))) < 0 ||
        dress(req, "authentication.k8s.io/v1", "TokenRequest") < 0) {
        free(token);
        ck_err_no_memory(&err);
        goto fail;
    }
    free(token);
    json_decref(sa);
    json_decref(pod);
    return send_created(hreq, req);
fail:
    json_decref(sa);
    json_decref(pod);
    json_decref(req);
    return ck__fail(hreq, &err);
}

/* The strings of a JSON array as a NULL-terminated array borrowing them; NULL: out of memory. */
static const char **string_list(const json_t *array, size_t *ret_n)
{
    size_t n = json_array_size(array);
    const char **list = ck__calloc(n + 1, sizeof(*list));
    *ret_n = 0;
    for (size_t i = 0; list && i < n; i++)
        if (json_string_value(json_array_get(array, i)))
            list[(*ret_n)++] = json_string_value(json_array_get(array, i));
    return list;
}

/*
 * TokenReview: who spec.token authenticates as for spec.audiences (the
 * server's audiences when empty), through the same token authenticators as
 * a request's bearer token. The result is in status; a token no
 * authenticator accepts is authenticated=false, never an error.
 */
static int review_token(struct ck_apiserver *server, json_t *review, struct ck_err *err)
{
    struct ck__auth *a = server->auth;
    json_t *spec = json_object_get(review, "spec");
    const char *token = claim(spec, "token", NULL);
    if (!token || !*token)
        return ck_err_status(err, "BadRequest",
                             "token is required for TokenReview in authentication");
    size_t n_aud = 0;
    const char **auds = string_list(json_object_get(spec, "audiences"), &n_aud);
    if (!auds)
        return ck_err_no_memory(err);
    struct ck_auth_config config = a->config;
    config.anonymous = false;
    if (n_aud) {
        config.api_audiences = auds;
        config.n_api_audiences = n_aud;
    }
    size_t header_len = strlen(token) + 8;
    char *header = ck__malloc(header_len);
    if (!header) {
        free(auds);
        return ck_err_no_memory(err);
    }
    snprintf(header, header_len, "Bearer %s", token);
    struct ck_auth_credentials creds = {.authorization = header, .now = (long long)time(NULL)};
    struct ck_auth_user *user = NULL;
    struct ck_err aerr = {0};
    int r = ck_auth_authenticate(&config, &creds, &user, &aerr);
    free(header);
    json_t *status = json_object();
    if (!status) {
        r = CK_ENOMEM;
    } else if (r == 0) {
        json_t *accepted = json_array();
        for (size_t i = 0; accepted && i < (n_aud ? n_aud : 1); i++)
            json_array_append_new(accepted, json_string(n_aud ? auds[i] : config.sa_issuer));
        if (json_object_set_new(status, "authenticated", json_true()) < 0 ||
            json_object_set_new(status, "user", ck__auth_user_info(user)) < 0 ||
            json_object_set_new(status, "audiences", accepted) < 0)
            r = CK_ENOMEM;
    } else if (r != CK_ENOMEM) {
        r = json_object_set_new(status, "user", json_object()) < 0 ||
                    json_object_set_new(status, "error", json_string(aerr.msg)) < 0
                ? CK_ENOMEM
                : 0;
    }
    free(auds);
    ck_auth_user_free(user);
    ck_err_release(&aerr);
    if (r == 0 && json_object_set_new(review, "status", status) == 0)
        return 0;
    json_decref(status);
    return ck_err_no_memory(err);
}

/* The user a SubjectAccessReview's spec describes (user, uid, groups, extra), or NULL. */
static struct ck_auth_user *spec_user(const json_t *spec)
{
    const char *name = claim(spec, "user", NULL);
    struct ck_auth_user *u = ck_auth_user_new(name ? name : "", claim(spec, "uid", NULL));
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(spec, "groups"), i, v)
    {
        if (u && json_string_value(v) && ck_auth_user_add_group(u, json_string_value(v)) < 0)
            u = ck_auth_user_free(u);
    }
    const char *key;
    json_t *values;
    json_object_foreach(json_object_get(spec, "extra"), key, values)
    {
        json_array_foreach(values, i, v)
        {
            if (u && json_string_value(v) &&
                ck_auth_user_add_extra(u, key, json_string_value(v)) < 0)
                u = ck_auth_user_free(u);
        }
    }
    return u;
}

/*
 * The decision of a SubjectAccessReview's spec for user into review.status:
 * system:masters is allowed (the privileged-group authorizer), then RBAC;
 * a denial is allowed=false with RBAC's reason, as kube-apiserver answers.
 */
static int review_access(struct ck_apiserver *server, json_t *review,
                         const struct ck_auth_user *user, struct ck_err *err)
{
    const json_t *spec = json_object_get(review, "spec");
    const json_t *ra = json_object_get(spec, "resourceAttributes");
    const json_t *nra = json_object_get(spec, "nonResourceAttributes");
    struct ck_rbac_request req = {.user = user};
    if (ra) {
        req.is_resource_request = true;
        req.verb = claim(ra, "verb", NULL);
        req.api_group = claim(ra, "group", NULL);
        req.resource = claim(ra, "resource", NULL);
        req.subresource = claim(ra, "subresource", NULL);
        req.name = claim(ra, "name", NULL);
        req.namespace = claim(ra, "namespace", NULL);
    } else {
        req.verb = claim(nra, "verb", NULL);
        req.path = claim(nra, "path", NULL);
    }
    if (!req.verb)
        req.verb = "";
    if (req.is_resource_request && !req.api_group)
        req.api_group = "";
    if (req.is_resource_request && !req.resource)
        req.resource = "";
    if (!req.is_resource_request && !req.path)
        req.path = "";
    char reason[512] = "";
    bool allowed = ck_auth_user_in_group(user, CK_AUTH_MASTERS);
    if (!allowed) {
        struct ck_rbac_policy *policy = ck_rbac_authorizer_current(server->auth->authorizer);
        allowed =
            policy && ck_rbac_authorize(policy, &req, reason, sizeof(reason)) == CK_RBAC_ALLOW;
        ck_rbac_policy_unref(policy);
    }
    json_t *status = json_pack("{s:b}", "allowed", allowed);
    if (status && !allowed && reason[0] &&
        json_object_set_new(status, "reason", json_string(reason)) < 0)
        status = (json_decref(status), NULL);
    if (!status || json_object_set_new(review, "status", status) < 0)
        return ck_err_no_memory(err);
    return 0;
}

/* Kubernetes' ValidateSubjectAccessReviewSpec (is_self: the Self variant, no user). */
static int validate_access_spec(const json_t *review, const char *kind, bool is_self,
                                struct ck_err *err)
{
    const json_t *spec = json_object_get(review, "spec");
    bool ra = json_is_object(json_object_get(spec, "resourceAttributes"));
    bool nra = json_is_object(json_object_get(spec, "nonResourceAttributes"));
    struct ck_field_errors errs = {0};
    if (ra && nra)
        ck_field_errors_add(&errs, CK_FIELD_INVALID, "spec.nonResourceAttributes", NULL, false,
                            "cannot be specified in combination with resourceAttributes");
    if (!ra && !nra)
        ck_field_errors_add(
            &errs, CK_FIELD_INVALID, "spec.resourceAttributes", NULL, false,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified");
    const char *user = claim(spec, "user", NULL);
    if (!is_self && (!user || !*user) && json_array_size(json_object_get(spec, "groups")) == 0)
        ck_field_errors_add(&errs, CK_FIELD_INVALID, "spec.user", "", true,
                            "at least one of user or group must be specified");
    int r = 0;
    if (errs.len || errs.nomem)
        r = ck__err_invalid(err, "authorization.k8s.io", kind, "", &errs);
    ck_field_errors_release(&errs);
    return r;
}

/*
 * What a LocalSubjectAccessReview adds (Kubernetes' REST and
 * ValidateLocalSubjectAccessReview): resource attributes only, in the
 * review's own namespace.
 */
static int validate_local_access(const json_t *review, const char *ns, struct ck_err *err)
{
    const json_t *spec = json_object_get(review, "spec");
    const json_t *ra = json_object_get(spec, "resourceAttributes");
    const char *ra_ns = claim(ra, "namespace", NULL);
    if (ra && (!ra_ns || strcmp(ra_ns, ns) != 0))
        return ck_err_status(err, "BadRequest",
                             "spec.resourceAttributes.namespace must match namespace: %s", ns);
    if (json_object_get(spec, "nonResourceAttributes")) {
        struct ck_field_errors errs = {0};
        ck_field_errors_add(&errs, CK_FIELD_INVALID, "spec.nonResourceAttributes", NULL, false,
                            "disallowed on this kind of request");
        int r = ck__err_invalid(err, "authorization.k8s.io", "LocalSubjectAccessReview", "", &errs);
        ck_field_errors_release(&errs);
        return r;
    }
    return 0;
}

/* SelfSubjectRulesReview: the requester's rules in spec.namespace, split as Kubernetes splits them.
 */
static int review_rules(struct ck_apiserver *server, json_t *review,
                        const struct ck_auth_user *user, struct ck_err *err)
{
    const char *ns = claim(json_object_get(review, "spec"), "namespace", NULL);
    struct ck_rbac_policy *policy = ck_rbac_authorizer_current(server->auth->authorizer);
    json_t *rules = policy ? ck_rbac_rules_for(policy, user, ns && *ns ? ns : NULL) : json_array();
    ck_rbac_policy_unref(policy);
    json_t *resource_rules = json_array(), *non_resource_rules = json_array();
    bool failed = !rules || !resource_rules || !non_resource_rules;
    size_t i;
    json_t *rule;
    json_array_foreach(rules, i, rule)
    {
        if (failed)
            break;
        json_t *out = json_object();
        const json_t *urls = json_object_get(rule, "nonResourceURLs");
        failed = !out || json_object_set(out, "verbs", json_object_get(rule, "verbs")) < 0;
        if (!failed && json_array_size(urls)) {
            failed = json_object_set(out, "nonResourceURLs", (json_t *)urls) < 0 ||
                     json_array_append(non_resource_rules, out) < 0;
        } else if (!failed) {
            static const char *const fields[] = {"apiGroups", "resources", "resourceNames"};
            for (size_t f = 0; f < 3 && !failed; f++) {
                json_t *v = json_object_get(rule, fields[f]);
                if (json_array_size(v))
                    failed = json_object_set(out, fields[f], v) < 0;
            }
            failed = failed || json_array_append(resource_rules, out) < 0;
        }
        json_decref(out);
    }
    json_decref(rules);
    json_t *status = failed
                         ? NULL
                         : json_pack("{s:O, s:O, s:b}", "resourceRules", resource_rules,
                                     "nonResourceRules", non_resource_rules, "incomplete", false);
    json_decref(resource_rules);
    json_decref(non_resource_rules);
    if (!status || json_object_set_new(review, "status", status) < 0)
        return ck_err_no_memory(err);
    return 0;
}

/* The create-only kinds this file answers, by group and resource. */
enum review {
    NOT_A_REVIEW,
    SELF_SUBJECT_REVIEW,
    TOKEN_REVIEW,
    SUBJECT_ACCESS_REVIEW,
    LOCAL_SUBJECT_ACCESS_REVIEW,
    SELF_SUBJECT_ACCESS_REVIEW,
    SELF_SUBJECT_RULES_REVIEW
};

static enum review review_of(const struct ck_kind *kind)
{
    static const struct {
        const char *group, *resource;
        enum review review;
    } reviews[] = {
        {"authentication.k8s.io", "selfsubjectreviews", SELF_SUBJECT_REVIEW},
        {"authentication.k8s.io", "tokenreviews", TOKEN_REVIEW},
        {"authorization.k8s.io", "subjectaccessreviews", SUBJECT_ACCESS_REVIEW},
        {"authorization.k8s.io", "localsubjectaccessreviews", LOCAL_SUBJECT_ACCESS_REVIEW},
        {"authorization.k8s.io", "selfsubjectaccessreviews", SELF_SUBJECT_ACCESS_REVIEW},
        {"authorization.k8s.io", "selfsubjectrulesreviews", SELF_SUBJECT_RULES_REVIEW},
    };
    for (size_t i = 0; i < sizeof(reviews) / sizeof(reviews[0]); i++)
        if (strcmp(kind->group, reviews[i].group) == 0 &&
            strcmp(kind->resource, reviews[i].resource) == 0)
            return reviews[i].review;
    return NOT_A_REVIEW;
}

static enum ck__res serve_review(struct ck_apiserver *server, struct ck__req *hreq,
                                 const struct ck__target *t, enum review review,
                                 const struct ck_auth_user *user, const char *body, size_t len)
{
    struct ck_err err = {0};
    char api_version[CK_API_VERSION_MAX];
    ck_kind_api_version(t->kind, api_version, sizeof(api_version));
    json_t *obj = decode_review(server, hreq, t->kind->schema, t->kind->kind, body, len, &err);
    if (!obj)
        return ck__fail(hreq, &err);
    int r = 0;
    switch (review) {
    case SELF_SUBJECT_REVIEW: {
        json_t *info = ck__auth_user_info(user);
        r = info && json_object_set_new(obj, "status", json_pack("{s:o}", "userInfo", info)) == 0
                ? 0
                : ck_err_no_memory(&err);
        json_t *meta = json_object();
        char now[64];
        if (r == 0 && (!meta || json_object_set_new(obj, "metadata", meta) < 0 ||
                       json_object_set_new(
                           meta, "creationTimestamp",
                           json_string(ck_rfc3339((long long)time(NULL), now, sizeof(now)))) < 0))
            r = ck_err_no_memory(&err);
        break;
    }
    case TOKEN_REVIEW:
        r = review_token(server, obj, &err);
        break;
    case SUBJECT_ACCESS_REVIEW:
        r = validate_access_spec(obj, t->kind->kind, false, &err);
        if (r == 0) {
            struct ck_auth_user *subject = spec_user(json_object_get(obj, "spec"));
            r = subject ? review_access(server, obj, subject, &err) : ck_err_no_memory(&err);
            ck_auth_user_free(subject);
        }
        break;
    case LOCAL_SUBJECT_ACCESS_REVIEW:
        r = validate_local_access(obj, t->namespace, &err);
        if (r == 0)
            r = validate_access_spec(obj, t->kind->kind, false, &err);
        if (r == 0) {
            struct ck_auth_user *subject = spec_user(json_object_get(obj, "spec"));
            r = subject ? review_access(server, obj, subject, &err) : ck_err_no_memory(&err);
            ck_auth_user_free(subject);
        }
        break;
    case SELF_SUBJECT_ACCESS_REVIEW:
        r = validate_access_spec(obj, t->kind->kind, true, &err);
        if (r == 0)
            r = review_access(server, obj, user, &err);
        break;
    case SELF_SUBJECT_RULES_REVIEW:
        r = review_rules(server, obj, user, &err);
        break;
    case NOT_A_REVIEW:
        break;
    }
    if (r == 0 && dress(obj, api_version, t->kind->kind) < 0)
        r = ck_err_no_memory(&err);
    if (r < 0) {
        json_decref(obj);
        return ck__fail(hreq, &err);
    }
    return send_created(hreq, obj);
}

bool ck__auth_serve(struct ck_apiserver *server, struct ck__req *hreq, const char *method,
                    const struct ck__target *t, const struct ck_auth_user *user, const char *body,
                    size_t len, enum ck__res *ret)
{
    enum review review = review_of(t->kind);
    bool token_request = t->kind == ck_kind_with_role(CK_KIND_ROLE_SERVICE_ACCOUNT) &&
                         strcmp(t->subresource, "token") == 0;
    if (review == NOT_A_REVIEW && !token_request)
        return false;
    if (strcmp(method, "POST") != 0 || (review != NOT_A_REVIEW && t->name[0]))
        *ret = ck__fail_with(hreq, "MethodNotAllowed",
                             "the server does not allow this method on the requested resource");
    else if (!server->auth || !user)
        *ret = ck__fail_with(hreq, "ServiceUnavailable",
                             "the server runs without authentication (--insecure-plain-http)");
    else if (token_request)
        *ret = serve_token_request(server, hreq, t, body, len);
    else
        *ret = serve_review(server, hreq, t, review, user, body, len);
    return true;
}

/* ---- the node authorizer: a node reads what its pods use ------------------------ */

#define NODE_USER_PREFIX "system:node:"
#define NODES_GROUP      "system:nodes"

const char *ck__auth_node_name(const struct ck_auth_user *user)
{
    if (!user || strncmp(user->name, NODE_USER_PREFIX, strlen(NODE_USER_PREFIX)) != 0 ||
        !ck_auth_user_in_group(user, NODES_GROUP))
        return NULL;
    const char *name = user->name + strlen(NODE_USER_PREFIX);
    return *name ? name : NULL;
}

/* Whether name is one of the objects of `what` ("secrets", "configmaps") a pod uses. */
static bool pod_references(const json_t *pod, bool secret, const char *name)
{
    const json_t *spec = json_object_get(pod, "spec");
    size_t i, j, k;
    json_t *v, *c, *e;
#define SAME(obj, field)                                                                           \
    (json_string_value(json_object_get((obj), (field))) &&                                         \
     strcmp(json_string_value(json_object_get((obj), (field))), name) == 0)
    json_array_foreach(json_object_get(spec, "volumes"), i, v)
    {
        if (secret ? SAME(json_object_get(v, "secret"), "secretName")
                   : SAME(json_object_get(v, "configMap"), "name"))
            return true;
        json_array_foreach(json_object_get(json_object_get(v, "projected"), "sources"), j, e)
        {
            if (SAME(json_object_get(e, secret ? "secret" : "configMap"), "name"))
                return true;
        }
    }
    if (secret)
        json_array_foreach(json_object_get(spec, "imagePullSecrets"), i, v)
        {
            if (SAME(v, "name"))
                return true;
        }
    static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
    for (k = 0; k < 3; k++)
        json_array_foreach(json_object_get(spec, lists[k]), i, c)
        {
            json_array_foreach(json_object_get(c, "env"), j, e)
            {
                const json_t *from = json_object_get(e, "valueFrom");
                if (SAME(json_object_get(from, secret ? "secretKeyRef" : "configMapKeyRef"),
                         "name"))
                    return true;
            }
            json_array_foreach(json_object_get(c, "envFrom"), j, e)
            {
                if (SAME(json_object_get(e, secret ? "secretRef" : "configMapRef"), "name"))
                    return true;
            }
        }
#undef SAME
    return false;
}

/*
 * Kubernetes' node authorizer, for what ckube's agent reads: a node may get a
 * Secret or ConfigMap that a pod bound to it references (volumes, projected
 * sources, env, envFrom, imagePullSecrets).
 */
static bool node_may_read(struct ck_apiserver *server, const char *node,
                          const struct ck_rbac_request *req, bool secret)
{
    if (strcmp(req->verb, "get") != 0 || (req->subresource && req->subresource[0]) || !req->name ||
        !req->name[0] || !req->namespace || !req->namespace[0])
        return false;
    json_t *pods = list_kind_in(server, ck_kind_with_role(CK_KIND_ROLE_POD), req->namespace);
    size_t i;
    json_t *pod;
    bool ok = false;
    json_array_foreach(pods, i, pod)
    {
        const char *bound = claim(json_object_get(pod, "spec"), "nodeName", NULL);
        if (bound && strcmp(bound, node) == 0 && pod_references(pod, secret, req->name)) {
            ok = true;
            break;
        }
    }
    json_decref(pods);
    return ok;
}

/* ---- following the store: RBAC writes of any server sharing it ------------------ */

/*
 * A watch callback must not block: it only marks the policy stale (or the
 * watch lost) and wakes the follower thread, which rebuilds. A burst of
 * writes costs one rebuild per wake-up, not one per write.
 */
static void rbac_event(const struct ck_store_event *event, void *userdata)
{
    struct ck__auth *a = userdata;
    if (event->type == CK_STORE_EVENT_PROGRESS)
        return;
    pthread_mutex_lock(&a->follow_lock);
    a->dirty = true;
    if (event->type == CK_STORE_EVENT_ERROR)
        a->watch_lost = true;
    pthread_cond_signal(&a->follow_wake);
    pthread_mutex_unlock(&a->follow_lock);
}

static void cancel_watches(struct ck__auth *a)
{
    for (size_t i = 0; i < 4; i++) {
        ck_store_watch_cancel(a->watches[i]);
        a->watches[i] = NULL;
    }
}

/* Watches the four kinds' prefixes from now. */
static int watch_rbac_kinds(struct ck__auth *a, struct ck_err *reterr)
{
    static const enum ck_kind_role roles[4] = {
        CK_KIND_ROLE_RBAC_ROLE, CK_KIND_ROLE_RBAC_CLUSTER_ROLE, CK_KIND_ROLE_RBAC_ROLE_BINDING,
        CK_KIND_ROLE_RBAC_CLUSTER_ROLE_BINDING};
    for (size_t i = 0; i < 4; i++) {
        const struct ck_kind *kind = ck_kind_with_role(roles[i]);
        char prefix[256];
        if (!kind)
            continue;
        int r = ck__collection_prefix(kind, NULL, prefix, sizeof(prefix));
        if (r == 0)
            r = ck_store_watch(a->server->store, prefix, strlen(prefix), true, 0, rbac_event, a,
                               &a->watches[i], reterr);
        if (r < 0) {
            cancel_watches(a);
            return r;
        }
    }
    return 0;
}

static void *follower_main(void *arg)
{
    struct ck__auth *a = arg;
    pthread_mutex_lock(&a->follow_lock);
    for (;;) {
        while (!a->dirty && !a->stopping)
            pthread_cond_wait(&a->follow_wake, &a->follow_lock);
        if (a->stopping)
            break;
        bool lost = a->watch_lost;
        a->dirty = a->watch_lost = false;
        pthread_mutex_unlock(&a->follow_lock);
        if (lost) {
            /* compacted or fallen behind: watch again from now, then read everything */
            cancel_watches(a);
            struct ck_err err = {0};
            if (watch_rbac_kinds(a, &err) < 0) {
                CK_LOGS(0, "Cannot watch the RBAC objects; retrying", "err", ck_err_message(&err));
                ck_err_release(&err);
                struct timespec pause = {.tv_sec = 1};
                nanosleep(&pause, NULL);
                pthread_mutex_lock(&a->follow_lock);
                a->dirty = a->watch_lost = true;
                continue;
            }
        }
        ck__auth_rbac_changed(a->server);
        pthread_mutex_lock(&a->follow_lock);
    }
    pthread_mutex_unlock(&a->follow_lock);
    return NULL;
}

static int start_following(struct ck__auth *a, struct ck_err *reterr)
{
    int r = watch_rbac_kinds(a, reterr);
    if (r < 0)
        return r;
    if (pthread_create(&a->follower, NULL, follower_main, a) != 0) {
        cancel_watches(a);
        return ck_err_set(reterr, CK_EIO, "cannot start the RBAC follower thread");
    }
    a->follower_started = true;
    return 0;
}

static void stop_following(struct ck__auth *a)
{
    if (a->follower_started) {
        pthread_mutex_lock(&a->follow_lock);
        a->stopping = true;
        pthread_cond_signal(&a->follow_wake);
        pthread_mutex_unlock(&a->follow_lock);
        pthread_join(a->follower, NULL);
        a->follower_started = false;
    }
    cancel_watches(a);
}

/* ---- reconciling the bootstrap roles and bindings -------------------------------- */

#define AUTOUPDATE_ANNOTATION "rbac.authorization.kubernetes.io/autoupdate"

/* What one reconciliation merges into the stored object. */
struct reconcile {
    const json_t *expected; /* the bootstrap object */
    bool is_binding;
};

/* Appends to list (an array) every element of more not already in it. */
static int union_into(json_t *list, const json_t *more)
{
    size_t i, j;
    json_t *v, *w;
    json_array_foreach(more, i, v)
    {
        bool found = false;
        json_array_foreach(list, j, w) found = found || json_equal(v, w);
        if (!found && json_array_append(list, v) < 0)
            return CK_ENOMEM;
    }
    return 0;
}

/*
 * Kubernetes' reconciliation (pkg/registry/rbac/reconciliation), as the RBAC
 * post-start hook runs it on every start: a role keeps its rules and gets
 * the bootstrap rules it does not cover (as atomic rules) and the
 * aggregation selectors it lacks; a binding keeps its subjects and gets the
 * missing ones. An object annotated autoupdate=false is left alone. Returns
 * current unchanged (a new reference) when nothing is missing, so the
 * registry commits nothing.
 */
static json_t *reconcile_mutate(const json_t *current, void *arg, struct ck_err *reterr)
{
    const struct reconcile *rc = arg;
    json_t *obj = ck__json_copy(current);
    if (!obj) {
        ck_err_no_memory(reterr);
        return NULL;
    }
    const char *autoupdate =
        claim(json_object_get(json_object_get(current, "metadata"), "annotations"),
              AUTOUPDATE_ANNOTATION, NULL);
    if (autoupdate && strcmp(autoupdate, "false") == 0)
        return obj;
    int r = 0;
    if (rc->is_binding) {
        json_t *subjects = json_object_get(obj, "subjects");
        if (!json_is_array(subjects)) {
            subjects = json_array();
            r = json_object_set_new(obj, "subjects", subjects) < 0 ? CK_ENOMEM : 0;
        }
        if (r == 0)
            r = union_into(subjects, json_object_get(rc->expected, "subjects"));
    } else {
        json_t *rules = json_object_get(obj, "rules");
        if (!json_is_array(rules)) {
            rules = json_array();
            r = json_object_set_new(obj, "rules", rules) < 0 ? CK_ENOMEM : 0;
        }
        json_t *missing = NULL;
        const json_t *want = json_object_get(rc->expected, "rules");
        if (r == 0 && want && !ck_rbac_rules_cover(rules, want, &missing))
            r = union_into(rules, missing);
        json_decref(missing);
        const json_t *want_agg = json_object_get(rc->expected, "aggregationRule");
        if (r == 0 && want_agg) {
            json_t *agg = json_object_get(obj, "aggregationRule");
            if (!json_is_object(agg)) {
                agg = json_object();
                r = json_object_set_new(obj, "aggregationRule", agg) < 0 ? CK_ENOMEM : 0;
            }
            json_t *selectors = r == 0 ? json_object_get(agg, "clusterRoleSelectors") : NULL;
            if (r == 0 && !json_is_array(selectors)) {
                selectors = json_array();
                r = json_object_set_new(agg, "clusterRoleSelectors", selectors) < 0 ? CK_ENOMEM : 0;
            }
            if (r == 0)
                r = union_into(selectors, json_object_get(want_agg, "clusterRoleSelectors"));
        }
    }
    if (r < 0) {
        json_decref(obj);
        ck_err_no_memory(reterr);
        return NULL;
    }
    return obj;
}

/*
 * Each bootstrap object of items, as Kubernetes' EnsureRole/EnsureRoleBinding:
 * reconciled when it exists, created when it does not. The update comes
 * first: on a restart every object exists, and a create would decode,
 * default and validate it only to be refused (a tenth of a restart's
 * instructions before the server listened).
 */
static int reconcile_kind(struct ck_apiserver *server, const struct ck_kind *kind,
                          const json_t *items, bool is_binding, struct ck_err *reterr)
{
    size_t i;
    json_t *expected;
    json_array_foreach(items, i, expected)
    {
        const char *name = claim(json_object_get(expected, "metadata"), "name", NULL);
        const char *ns = claim(json_object_get(expected, "metadata"), "namespace", NULL);
        if (!name)
            continue;
        struct reconcile rc = {.expected = expected, .is_binding = is_binding};
        char *out = NULL;
        size_t len = 0;
        struct ck_err err = {0};
        int r = ck__registry_update(server->registry, kind, ns, name, NULL, reconcile_mutate, &rc,
                                    false, &out, &len, &err);
        free(out);
        out = NULL;
        if (r == CK_ENOENT) { /* missing (the first start, or deleted by hand): created */
            ck_err_release(&err);
            err = (struct ck_err){0};
            r = ck__registry_create(server->registry, kind, ns, expected, false, &out, &len, &err);
            free(out);
            out = NULL;
            if (r < 0 && r != CK_EEXIST) { /* EEXIST: another server made it meanwhile */
                ck_err_set(reterr, CK_EIO, "cannot create %s %s: %s", kind->kind, name,
                           ck_err_message(&err));
                ck_err_release(&err);
                return CK_EIO;
            }
            ck_err_release(&err);
            err = (struct ck_err){0};
            /* then reconciled as one found is (it gets an empty rules array, say) */
            r = ck__registry_update(server->registry, kind, ns, name, NULL, reconcile_mutate, &rc,
                                    false, &out, &len, &err);
            free(out);
        }
        if (r == CK_ENOMEM) {
            ck_err_release(&err);
            return ck_err_no_memory(reterr);
        }
        if (r < 0) /* deleted meanwhile, or invalid: Kubernetes logs and goes on */
            CK_LOGS(0, "Cannot reconcile a bootstrap RBAC object", "kind", kind->kind, "name", name,
                    "err", ck_err_message(&err));
        ck_err_release(&err);
    }
    return 0;
}

static int reconcile_bootstrap(struct ck_apiserver *server, const json_t *roles,
                               const json_t *bindings, struct ck_err *reterr)
{
    const struct ck_kind *cr_kind = ck_kind_with_role(CK_KIND_ROLE_RBAC_CLUSTER_ROLE);
    const struct ck_kind *crb_kind = ck_kind_with_role(CK_KIND_ROLE_RBAC_CLUSTER_ROLE_BINDING);
    int r = cr_kind ? reconcile_kind(server, cr_kind, roles, false, reterr) : 0;
    if (r == 0 && crb_kind)
        r = reconcile_kind(server, crb_kind, bindings, true, reterr);
    if (r == 0)
        r = reconcile_authentication_reader(server, reterr);
    return r;
}

/*
 * The Role and RoleBinding extension-apiserver-authentication-reader of
 * Kubernetes' bootstrap policy (NamespaceRoles, NamespaceRoleBindings of
 * kube-system): read access to the ConfigMap publish_authentication writes.
 */
static int reconcile_authentication_reader(struct ck_apiserver *server, struct ck_err *reterr)
{
    const struct ck_kind *role_kind = ck_kind_with_role(CK_KIND_ROLE_RBAC_ROLE);
    const struct ck_kind *rb_kind = ck_kind_with_role(CK_KIND_ROLE_RBAC_ROLE_BINDING);
    if (!role_kind || !rb_kind)
        return 0;
    const char *api_version = "rbac.authorization.k8s.io/v1";
    json_t *role = json_pack(
        "[{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:{s:s}}, s:[{s:[s], s:[s], s:[s], s:[s,s,s]}]}]",
        "apiVersion", api_version, "kind", "Role", "metadata", "name", AUTH_READER, "namespace",
        "kube-system", "annotations", AUTOUPDATE_ANNOTATION, "true", "labels",
        "kubernetes.io/bootstrapping", "rbac-defaults", "rules", "apiGroups", "", "resources",
        "configmaps", "resourceNames", AUTH_CONFIGMAP, "verbs", "get", "list", "watch");
    json_t *binding = json_pack(
        "[{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:{s:s}}, s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:s}, "
        "{s:s, s:s, s:s}]}]",
        "apiVersion", api_version, "kind", "RoleBinding", "metadata", "name",
        "system::" AUTH_READER, "namespace", "kube-system", "annotations", AUTOUPDATE_ANNOTATION,
        "true", "labels", "kubernetes.io/bootstrapping", "rbac-defaults", "roleRef", "apiGroup",
        "rbac.authorization.k8s.io", "kind", "Role", "name", AUTH_READER, "subjects", "apiGroup",
        "rbac.authorization.k8s.io", "kind", "User", "name", "system:kube-controller-manager",
        "apiGroup", "rbac.authorization.k8s.io", "kind", "User", "name", "system:kube-scheduler");
    int r = role && binding ? reconcile_kind(server, role_kind, role, false, reterr)
                            : ck_err_no_memory(reterr);
    if (r == 0)
        r = reconcile_kind(server, rb_kind, binding, true, reterr);
    json_decref(role);
    json_decref(binding);
    return r;
}

static json_t *set_data(const json_t *current, void *arg, struct ck_err *reterr)
{
    json_t *obj = ck__json_copy(current);
    if (!obj || json_object_set(obj, "data", arg) < 0) {
        json_decref(obj);
        ck_err_no_memory(reterr);
        return NULL;
    }
    return obj;
}

/*
 * kube-system/extension-apiserver-authentication, as kube-apiserver's cluster
 * authentication trust controller keeps it: the client CA and the
 * request-header configuration, for aggregated servers. Written at start
 * (replacing what another configuration left); a failure is logged.
 */
static void publish_authentication(struct ck_apiserver *server)
{
    struct ck__auth *a = server->auth;
    const struct ck_kind *kind = ck_kind_with_role(CK_KIND_ROLE_CONFIG_MAP);
    if (!kind || (!a->client_ca_pem && !a->requestheader))
        return;
    json_t *data = ck__requestheader_configmap_data(a->requestheader, a->client_ca_pem);
    char *out = NULL;
    size_t len = 0;
    struct ck_err err = {0};
    int r = data ? ck__registry_update(server->registry, kind, "kube-system", AUTH_CONFIGMAP, NULL,
                                       set_data, data, false, &out, &len, &err)
                 : ck_err_no_memory(&err);
    free(out);
    out = NULL;
    if (r == CK_ENOENT) {
        ck_err_release(&err);
        err = (struct ck_err){0};
        json_t *cm =
            json_pack("{s:s, s:s, s:{s:s, s:s}, s:O}", "apiVersion", "v1", "kind", "ConfigMap",
                      "metadata", "name", AUTH_CONFIGMAP, "namespace", "kube-system", "data", data);
        r = cm ? ck__registry_create(server->registry, kind, "kube-system", cm, false, &out, &len,
                                     &err)
               : ck_err_no_memory(&err);
        json_decref(cm);
        free(out);
    }
    if (r < 0)
        CK_LOGS(0, "Cannot write the authentication ConfigMap", "name", AUTH_CONFIGMAP, "err",
                ck_err_message(&err));
    ck_err_release(&err);
    json_decref(data);
}
