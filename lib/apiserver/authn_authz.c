/*
 * authn_authz.c - TLS material, authentication and RBAC authorization of the
 * API server's requests.
 *
 * At start (ck__auth_init) the PKI directory is created or reused through
 * libckube-auth (CA, serving certificate, admin certificate,
 * service-account key), and the static token file and the service-account
 * key are loaded. Once the registry exists (ck__auth_bootstrap) the bootstrap
 * ClusterRoles and ClusterRoleBindings are written when missing, as
 * kube-apiserver's RBAC post-start hook writes them, and the policy is
 * compiled from the four RBAC kinds in the store.
 *
 * Per request (ck__auth_request), before routing, kube-apiserver's filter
 * order: authentication (the client certificate libmicrohttpd's GnuTLS
 * session received, verified here against the client CA; else the bearer
 * token; else anonymous), 401 on a bad credential; then members of
 * system:masters pass; then RBAC with attributes derived from the path and
 * method (Kubernetes' RequestInfo), 403 with Kubernetes' message.
 *
 * Writes (POST, PUT, PATCH) of roles and bindings go through the escalation
 * check first (ck__auth_check_write; a PATCH is checked on the patch applied
 * to the stored object) and rebuild the policy after (ck__auth_rbac_changed):
 * the new policy is built under a mutex (so two rebuilds never swap in an
 * older view last) and swapped in; requests in flight keep the policy they
 * started with. Writes made by another server sharing an etcd store are not
 * seen until this server's next RBAC write or restart.
 *
 * Without pki_dir and tls_cert_file none of this runs: plain HTTP, no
 * authentication, every request allowed, loopback only.
 */
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/apiserver.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_PEM (1u * 1024 * 1024)

struct ck__auth {
    struct ck_pki pki;
    char *pki_dir;
    char *cert_pem, *key_pem, *client_ca_pem;
    struct ck_auth_tokens *tokens;
    struct ck_auth_sa_key *sa_key;
    struct ck_auth_config config;
    struct ck_rbac_authorizer *authorizer;
    pthread_mutex_t rebuild_lock;
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

int ck__auth_init(struct ck_apiserver *server, const struct ck_apiserver_config *config,
                  const char *listen_host, struct ck_err *reterr)
{
    if (!config->pki_dir && !config->tls_cert_file)
        return 0;
    struct ck__auth *a = ck__calloc(1, sizeof(*a));
    if (!a)
        return ck_err_no_memory(reterr);
    pthread_mutex_init(&a->rebuild_lock, NULL);
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
    };
    return 0;
}

void ck__auth_free(struct ck__auth *a)
{
    if (!a)
        return;
    ck_rbac_authorizer_free(a->authorizer);
    ck_auth_sa_key_free(a->sa_key);
    ck_auth_tokens_free(a->tokens);
    free(a->cert_pem);
    free(a->key_pem);
    free(a->client_ca_pem);
    free(a->pki_dir);
    ck_pki_release(&a->pki);
    pthread_mutex_destroy(&a->rebuild_lock);
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

const struct ck_pki *ck__auth_pki(const struct ck__auth *a)
{
    return a ? &a->pki : NULL;
}

/* Every stored object of kind as a new array, or NULL (out of memory, store failure). */
static json_t *list_kind(struct ck_apiserver *server, const struct ck_kind *kind)
{
    json_t *items = json_array();
    if (!kind || !items)
        return items;
    char prefix[256];
    if (ck__collection_prefix(kind, NULL, prefix, sizeof(prefix)) < 0) {
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
    if (!a || !a->authorizer)
        return;
    pthread_mutex_lock(&a->rebuild_lock);
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

/* Creates each object of items (of kind) unless it exists. */
static int create_missing(struct ck_apiserver *server, const struct ck_kind *kind,
                          const json_t *items, struct ck_err *reterr)
{
    size_t i;
    json_t *obj;
    json_array_foreach(items, i, obj)
    {
        char *out = NULL;
        size_t len = 0;
        struct ck_err err = {0};
        int r = ck__registry_create(server->registry, kind, NULL, obj, false, &out, &len, &err);
        free(out);
        if (r < 0 && r != CK_EEXIST) {
            ck_err_set(reterr, CK_EIO, "cannot create %s %s: %s", kind->kind,
                       json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")),
                       ck_err_message(&err));
            ck_err_release(&err);
            return CK_EIO;
        }
        ck_err_release(&err);
    }
    return 0;
}

int ck__auth_bootstrap(struct ck_apiserver *server, struct ck_err *reterr)
{
    struct ck__auth *a = server->auth;
    if (!a)
        return 0;
    const struct ck_kind *cr_kind = ck_kind_with_role(CK_KIND_ROLE_RBAC_CLUSTER_ROLE);
    const struct ck_kind *crb_kind = ck_kind_with_role(CK_KIND_ROLE_RBAC_CLUSTER_ROLE_BINDING);
    json_t *roles = NULL, *bindings = NULL;
    int r = ck_rbac_bootstrap(&roles, &bindings, reterr);
    if (r == 0 && cr_kind)
        r = create_missing(server, cr_kind, roles, reterr);
    if (r == 0 && crb_kind)
        r = create_missing(server, crb_kind, bindings, reterr);
    json_decref(roles);
    json_decref(bindings);
    struct ck_rbac_policy *policy = NULL;
    if (r == 0)
        r = build_policy(server, &policy, reterr);
    if (r == 0) {
        a->authorizer = ck_rbac_authorizer_new(policy);
        if (!a->authorizer) {
            ck_rbac_policy_unref(policy);
            r = ck_err_no_memory(reterr);
        }
    }
    return r;
}

/*
 * What a connection remembers: whether its client certificate verified. A
 * TLS connection's peer certificate cannot change (libmicrohttpd allows no
 * renegotiation), so it is verified once, at the connection's first request,
 * not at every request. Only the connection's own thread touches it.
 */
struct conn_state {
    int peer_verified; /* 0: not yet checked, 1: verified, -1: refused */
};

void ck__auth_notify_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                                enum MHD_ConnectionNotificationCode toe)
{
    (void)conn;
    const struct ck_apiserver *server = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        /* no memory: the certificate is verified at every request instead */
        *socket_context = server->auth ? ck__calloc(1, sizeof(struct conn_state)) : NULL;
    } else {
        free(*socket_context);
        *socket_context = NULL;
    }
}

/*
 * The verified client certificate of the connection (DER, borrowed from the
 * session) in *ret_der, or none. -1 when the client sent one that does not
 * verify against the client CA (or has expired).
 */
static int peer_certificate(struct MHD_Connection *conn, const void **ret_der, size_t *ret_len)
{
    *ret_der = NULL;
    *ret_len = 0;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t session = ci ? (gnutls_session_t)ci->tls_session : NULL;
    if (!session)
        return 0;
    unsigned n = 0;
    const gnutls_datum_t *certs = gnutls_certificate_get_peers(session, &n);
    if (!certs || n == 0)
        return 0;
    const union MHD_ConnectionInfo *sc =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn_state *state = sc ? sc->socket_context : NULL;
    if (!state || state->peer_verified == 0) {
        unsigned status = 0;
        int verified =
            gnutls_certificate_verify_peers2(session, &status) == 0 && status == 0 ? 1 : -1;
        if (state)
            state->peer_verified = verified;
        if (verified < 0)
            return -1;
    } else if (state->peer_verified < 0) {
        return -1;
    }
    *ret_der = certs[0].data;
    *ret_len = certs[0].size;
    return 0;
}

/* Kubernetes' RequestInfo verb of a resource request. */
static const char *resource_verb(struct MHD_Connection *conn, const char *method,
                                 const struct ck__target *t)
{
    bool named = t->name[0] != '\0';
    if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) {
        if (ck__query_bool(conn, "watch"))
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

enum MHD_Result ck__auth_request(struct ck_apiserver *server, struct MHD_Connection *conn,
                                 const char *method, const char *url,
                                 struct ck_auth_user **ret_user, bool *ret_answered)
{
    struct ck__auth *a = server->auth;
    *ret_answered = false;
    *ret_user = NULL;
    if (!a)
        return MHD_YES;

    struct ck_auth_credentials creds = {
        .authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"),
        .now = (long long)time(NULL),
    };
    struct ck_err err = {0};
    struct ck_auth_user *user = NULL;
    int r = peer_certificate(conn, &creds.peer_cert_der, &creds.peer_cert_len) < 0
                ? ck_err_set(&err, CK_EPERM, "the client certificate does not verify")
                : ck_auth_authenticate(&a->config, &creds, &user, &err);
    if (r < 0) {
        *ret_answered = true;
        if (r == CK_ENOMEM) {
            ck_err_release(&err);
            return ck__fail_no_memory(conn);
        }
        CK_LOGV(2, "Unable to authenticate the request: %s", ck_err_message(&err));
        ck_err_release(&err);
        return ck__fail_with(conn, "Unauthorized", "Unauthorized");
    }
    if (ck_auth_user_in_group(user, CK_AUTH_MASTERS)) {
        *ret_user = user;
        return MHD_YES;
    }

    struct ck_rbac_request req = {.user = user};
    struct ck__target target;
    char verb[16];
    if (ck__route(url, &target) == 0) {
        req.is_resource_request = true;
        req.verb = resource_verb(conn, method, &target);
        req.api_group = target.kind->group;
        req.resource = target.kind->resource;
        req.subresource = target.subresource;
        req.name = target.name;
        req.namespace = target.namespace;
        /* a namespace's own requests are in that namespace (RequestInfo) */
        if (target.kind->role == CK_KIND_ROLE_NAMESPACE && target.name[0])
            req.namespace = target.name;
    } else {
        size_t i = 0;
        for (; method[i] && i + 1 < sizeof(verb); i++)
            verb[i] =
                (char)(method[i] >= 'A' && method[i] <= 'Z' ? method[i] - 'A' + 'a' : method[i]);
        verb[i] = '\0';
        req.verb = verb;
        req.path = url;
    }
    struct ck_rbac_policy *policy = ck_rbac_authorizer_current(a->authorizer);
    char reason[512] = "";
    enum ck_rbac_decision d =
        policy ? ck_rbac_authorize(policy, &req, reason, sizeof(reason)) : CK_RBAC_NO_OPINION;
    ck_rbac_policy_unref(policy);
    if (d == CK_RBAC_ALLOW) {
        *ret_user = user;
        return MHD_YES;
    }
    *ret_answered = true;
    ck_rbac_forbidden(&err, &req, reason);
    CK_LOGV(2, "Forbidden: %s", ck_err_message(&err));
    enum MHD_Result ret = ck__fail(conn, &err);
    ck_auth_user_free(user);
    return ret;
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
    if (current &&
        ck__patch_init(&patch, server->schemas, t->kind, content_type, body, len, &err) == 0) {
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
