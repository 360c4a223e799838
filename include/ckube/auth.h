/*
 * ckube/auth.h - libckube-auth: who a request comes from and what it may do.
 *
 * Four pieces, each usable alone, none of them doing I/O on a request path:
 *
 * - users and authentication (authn.c): the user info every authenticator
 *   yields (name, uid, groups, extra, as k8s.io/apiserver's user.Info), the
 *   user of an x509 client certificate (CN, O), bearer tokens from a
 *   kube-apiserver --token-auth-file CSV, and the anonymous user;
 * - ServiceAccount tokens (jwt.c): JWTs signed and verified as kube-apiserver's
 *   TokenRequest issues them (RS256 for RSA keys, ES256 for P-256 keys);
 * - RBAC (rbac.c, bootstrap.c): an immutable policy compiled from Role,
 *   ClusterRole, RoleBinding and ClusterRoleBinding objects, indexed by
 *   subject, the decision and Kubernetes' denial message, the escalation
 *   check, ClusterRole aggregation and the bootstrap policy of Kubernetes 1.32;
 * - the PKI (pki.c): CA, serving, admin and component certificates created at
 *   first start in a directory, reused, renewed near expiry.
 *
 * Cryptography is GnuTLS's (the library libmicrohttpd serves TLS with).
 * Errors follow ckube/util.h: 0 or a negative CK_E* code, words in a ck_err.
 */
#ifndef CKUBE_AUTH_H
#define CKUBE_AUTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include <ckube/util.h>

/* ---- users (authn.c) ----------------------------------------------------- */

#define CK_AUTH_ANONYMOUS_USER      "system:anonymous"
#define CK_AUTH_UNAUTHENTICATED     "system:unauthenticated"
#define CK_AUTH_AUTHENTICATED       "system:authenticated"
#define CK_AUTH_MASTERS             "system:masters"
#define CK_AUTH_SERVICEACCOUNTS     "system:serviceaccounts"
#define CK_AUTH_SERVICEACCOUNT_USER "system:serviceaccount:"

/*
 * Who made a request. Heap-allocated and owned by whoever holds it; every
 * string belongs to the struct. extra is NULL or an object of string arrays.
 */
struct ck_auth_user {
    char *name;
    char *uid; /* "" when unknown */
    char **groups;
    size_t n_groups;
    json_t *extra;
};

/* A user with no groups; uid may be NULL. NULL when out of memory. */
struct ck_auth_user *ck_auth_user_new(const char *name, const char *uid);

/* Appends group unless already there. 0 or CK_ENOMEM. */
int ck_auth_user_add_group(struct ck_auth_user *user, const char *group);

/* Appends value to extra[key] (creating both as needed). 0 or CK_ENOMEM. */
int ck_auth_user_add_extra(struct ck_auth_user *user, const char *key, const char *value);

bool ck_auth_user_in_group(const struct ck_auth_user *user, const char *group);

/* A deep copy, or NULL when out of memory. */
struct ck_auth_user *ck_auth_user_copy(const struct ck_auth_user *user);

struct ck_auth_user *ck_auth_user_free(struct ck_auth_user *user);

/* system:anonymous in system:unauthenticated. Caller frees; NULL when out of memory. */
struct ck_auth_user *ck_auth_anonymous(void);

/*
 * What kube-apiserver's authenticated-group adder does to every user an
 * authenticator returned: adds system:authenticated unless the user is
 * already in system:authenticated or system:unauthenticated. 0 or CK_ENOMEM.
 */
int ck_auth_mark_authenticated(struct ck_auth_user *user);

/*
 * The user of a client certificate the TLS layer has already verified
 * against the client CA: name from the subject's CN, groups from its O
 * values, then system:authenticated. data is the certificate in DER (pem
 * false) or PEM. A certificate without CN is refused (CK_EINVAL), as
 * Kubernetes' CommonNameUserConversion refuses it.
 */
int ck_auth_user_from_cert(const void *data, size_t len, bool pem, struct ck_auth_user **ret_user,
                           struct ck_err *reterr);

/*
 * Static bearer tokens (kube-apiserver --token-auth-file): CSV lines
 * `token,user,uid[,"group1,group2"]`. Immutable once parsed; any thread may
 * authenticate against it.
 */
struct ck_auth_tokens;

/*
 * Parses the file's text (len bytes, need not be NUL-terminated). A line with
 * fewer than three fields, a bare or unterminated quote fails the whole file
 * with the line number in reterr; a record with an empty token is skipped; a
 * token listed twice keeps its last line. name is used in messages.
 */
int ck_auth_tokens_parse(const char *name, const char *text, size_t len,
                         struct ck_auth_tokens **ret_tokens, struct ck_err *reterr);

/* Reads and parses path. */
int ck_auth_tokens_load(const char *path, struct ck_auth_tokens **ret_tokens,
                        struct ck_err *reterr);

size_t ck_auth_tokens_count(const struct ck_auth_tokens *tokens);

/*
 * The user a bearer token names (groups from the file, then
 * system:authenticated) as a new user the caller frees, or NULL when the
 * token is unknown (or memory runs out).
 */
struct ck_auth_user *ck_auth_tokens_authenticate(const struct ck_auth_tokens *tokens,
                                                 const char *token);

struct ck_auth_tokens *ck_auth_tokens_free(struct ck_auth_tokens *tokens);

/* ---- ServiceAccount tokens (jwt.c) ----------------------------------------- */

/*
 * A service-account signing key (private, for the server) or verifying key
 * (public only). RS256 for RSA keys, ES256 for ECDSA P-256 keys; the "kid"
 * header is the unpadded base64url SHA-256 of the public key's DER, as
 * kube-apiserver computes it. Immutable; shareable between threads.
 */
struct ck_auth_sa_key;

/* Loads a PEM private key (PKCS#1, PKCS#8 or SEC1). */
int ck_auth_sa_key_from_pem(const char *pem, size_t len, struct ck_auth_sa_key **ret_key,
                            struct ck_err *reterr);
int ck_auth_sa_key_load(const char *path, struct ck_auth_sa_key **ret_key, struct ck_err *reterr);

/* "RS256" or "ES256". */
const char *ck_auth_sa_key_alg(const struct ck_auth_sa_key *key);
const char *ck_auth_sa_key_id(const struct ck_auth_sa_key *key);

struct ck_auth_sa_key *ck_auth_sa_key_free(struct ck_auth_sa_key *key);

/* What a TokenRequest asks for. Strings are borrowed. */
struct ck_auth_token_request {
    const char *issuer;
    const char *namespace;
    const char *sa_name;
    const char *sa_uid;
    const char *const *audiences; /* at least one */
    size_t n_audiences;
    long long now;                /* Unix seconds: iat and nbf */
    long long expiration_seconds; /* exp = now + this */
    const char *pod_name;         /* NULL unless bound to a pod */
    const char *pod_uid;
    const char *jti; /* NULL: a random UUID */
};

/* Signs a token; *ret_token is the compact JWS the caller frees. */
int ck_auth_jwt_sign(const struct ck_auth_sa_key *key, const struct ck_auth_token_request *req,
                     char **ret_token, struct ck_err *reterr);

/* Clock skew tolerated on exp, nbf and iat, in seconds (go-jose's default leeway). */
#define CK_AUTH_JWT_LEEWAY 60

/*
 * Verifies a token: structure, header alg matching the key, signature, iss
 * == issuer, one of aud in audiences, nbf/iat not in the future and exp not
 * past at `now` (each with CK_AUTH_JWT_LEEWAY), and the kubernetes.io claims
 * naming the same service account as sub. On success *ret_user is
 * system:serviceaccount:NS:NAME with uid, groups system:serviceaccounts,
 * system:serviceaccounts:NS, system:authenticated and, when bound, extra
 * authentication.kubernetes.io/pod-name and pod-uid (plus credential-id
 * JTI=... when the token has a jti); *ret_claims (may be NULL) gets the
 * payload so the caller can check the account and pod still exist.
 * Any failure is CK_EINVAL (a 401) with the reason in reterr.
 */
int ck_auth_jwt_verify(const struct ck_auth_sa_key *key, const char *token, const char *issuer,
                       const char *const *audiences, size_t n_audiences, long long now,
                       struct ck_auth_user **ret_user, json_t **ret_claims, struct ck_err *reterr);

/* ---- the request authenticator (authn.c) ------------------------------------ */

/* What the server accepts as credentials. Everything borrowed; NULL/0 turns a source off. */
struct ck_auth_config {
    const struct ck_auth_tokens *tokens; /* --token-auth-file */
    const struct ck_auth_sa_key *sa_key; /* ServiceAccount token verification */
    const char *sa_issuer;               /* --service-account-issuer */
    const char *const *api_audiences;    /* --api-audiences; default: the issuer */
    size_t n_api_audiences;
    bool anonymous; /* --anonymous-auth (Kubernetes' default: true) */
    /*
     * Called with the claims of a ServiceAccount token whose signature and
     * times verified: 0 when the account (and the pod it is bound to) still
     * exist with the uids the claims name, else CK_EPERM (a 401) with the
     * reason, as kube-apiserver's legacy validator checks them. NULL: not
     * checked.
     */
    int (*sa_validate)(void *arg, const json_t *claims, struct ck_err *reterr);
    void *sa_validate_arg;
    /*
     * Bootstrap tokens (kube-apiserver --enable-bootstrap-token-auth): the
     * kube-system Secret bootstrap-token-ID for a bearer token ID.SECRET of
     * that shape, as a new reference, or NULL when there is none. NULL: off.
     */
    json_t *(*bootstrap_secret)(void *arg, const char *token_id);
    void *bootstrap_secret_arg;
};

/*
 * Kubernetes' bootstrap token authenticator for token against secret (the
 * Secret its id names): a user system:bootstrap:ID in system:bootstrappers
 * and the secret's auth-extra-groups when the secret is a live
 * bootstrap.kubernetes.io/token whose token-id and token-secret are the
 * token's, usage-bootstrap-authentication is "true" and expiration (if any)
 * is after now; else NULL with the reason in reterr (CK_EPERM) or CK_ENOMEM.
 */
struct ck_auth_user *ck_auth_bootstrap_token_user(const json_t *secret, const char *token,
                                                  long long now, struct ck_err *reterr);

/* Whether token has a bootstrap token's shape, [a-z0-9]{6}.[a-z0-9]{16}. */
bool ck_auth_is_bootstrap_token(const char *token);

/* The credentials of one request. */
struct ck_auth_credentials {
    const char *authorization; /* the Authorization header, or NULL */
    const void *peer_cert_der; /* the client certificate the TLS layer verified, or NULL */
    size_t peer_cert_len;
    long long now; /* Unix seconds, for token expiry */
};

/*
 * kube-apiserver's authentication chain for one request: a verified client
 * certificate, else a bearer token (`Authorization: Bearer T`, the scheme in
 * any case) tried against the token file and then as a ServiceAccount JWT,
 * else the anonymous user when allowed. A bearer token no source accepts is
 * refused even when anonymous requests are allowed, as Kubernetes refuses
 * it. Returns 0 and a new user (system:authenticated added), or CK_EPERM for
 * a 401 with the reason in reterr (for the log; the client sees only
 * "Unauthorized").
 */
int ck_auth_authenticate(const struct ck_auth_config *config,
                         const struct ck_auth_credentials *creds, struct ck_auth_user **ret_user,
                         struct ck_err *reterr);

/* ---- RBAC (rbac.c) --------------------------------------------------------- */

/* What the authorizer is asked (authorizer.Attributes). Strings borrowed. */
struct ck_rbac_request {
    const struct ck_auth_user *user;
    const char *verb;
    bool is_resource_request;
    /* resource requests */
    const char *api_group; /* "" for core */
    const char *resource;
    const char *subresource; /* NULL or "" for none */
    const char *name;        /* NULL or "" for collections */
    const char *namespace;   /* NULL or "" for cluster scope */
    /* non-resource requests */
    const char *path;
};

/*
 * A compiled RBAC policy: ClusterRoles (aggregated), Roles and the bindings
 * indexed by subject. Immutable and refcounted: any number of threads may
 * authorize against one; rebuild a new one when objects change.
 */
struct ck_rbac_policy;

/*
 * Compiles a policy from four arrays of API objects (each may be NULL).
 * ClusterRoles with an aggregationRule get the union of the rules of the
 * ClusterRoles their selectors match (to a fixed point). Objects that are
 * malformed are skipped, as a controller would ignore them. CK_ENOMEM only.
 */
int ck_rbac_policy_new(const json_t *roles, const json_t *cluster_roles,
                       const json_t *role_bindings, const json_t *cluster_role_bindings,
                       struct ck_rbac_policy **ret_policy, struct ck_err *reterr);

struct ck_rbac_policy *ck_rbac_policy_ref(struct ck_rbac_policy *policy);
struct ck_rbac_policy *ck_rbac_policy_unref(struct ck_rbac_policy *policy);

/*
 * Where the server keeps the policy requests are decided with: the current
 * policy, swapped whole when RBAC objects change (a watcher builds the new
 * one off to the side). A request takes a reference to the policy current
 * when it starts and decides everything with it; a swap never waits for
 * requests, and an old policy is freed when its last request drops it.
 */
struct ck_rbac_authorizer;

/* Starts with policy (ownership taken; may be NULL: every request denied). */
struct ck_rbac_authorizer *ck_rbac_authorizer_new(struct ck_rbac_policy *policy);
struct ck_rbac_authorizer *ck_rbac_authorizer_free(struct ck_rbac_authorizer *a);

/* The current policy with a reference the caller drops with ck_rbac_policy_unref(); or NULL. */
struct ck_rbac_policy *ck_rbac_authorizer_current(struct ck_rbac_authorizer *a);

/* Makes policy (ownership taken) the current one and drops the authorizer's old reference. */
void ck_rbac_authorizer_swap(struct ck_rbac_authorizer *a, struct ck_rbac_policy *policy);

enum ck_rbac_decision {
    CK_RBAC_NO_OPINION, /* Kubernetes' DecisionNoOpinion: with RBAC alone, a denial */
    CK_RBAC_ALLOW,
};

/*
 * Decides req. When denied and reason/size are given, reason gets what RBAC
 * adds to the denial: "" or "RBAC: clusterrole.rbac.authorization.k8s.io
 * \"x\" not found" for bindings to missing roles. Lock-free and allocation-free.
 */
enum ck_rbac_decision ck_rbac_authorize(const struct ck_rbac_policy *policy,
                                        const struct ck_rbac_request *req, char *reason,
                                        size_t size);

/*
 * Kubernetes' forbidden message for req, e.g. `User "jane" cannot list
 * resource "pods" in API group "" in the namespace "prod"`; `... at the
 * cluster scope` without namespace; `User "x" cannot get path "/healthz"` for
 * non-resource requests; resource "pods/status" with a subresource. Returns buf.
 */
const char *ck_rbac_forbidden_message(const struct ck_rbac_request *req, char *buf, size_t size);

/*
 * The whole Status message a 403 carries: `pods is forbidden: <message>`,
 * `deployments.apps "web" is forbidden: ...`, `forbidden: ...` for paths,
 * then `: <reason>` when reason is not empty. Returns buf.
 */
const char *ck_rbac_status_message(const struct ck_rbac_request *req, const char *reason, char *buf,
                                   size_t size);

/*
 * Fills err as the 403 kube-apiserver answers: reason Forbidden, the
 * ck_rbac_status_message() sentence, details {name, group, kind: resource}
 * (borrowed from req: its strings must outlive err). Returns CK_EPERM.
 * Release err with ck_err_release().
 */
int ck_rbac_forbidden(struct ck_err *err, const struct ck_rbac_request *req, const char *reason);

/*
 * The rules that apply to user in namespace (cluster-wide ones always,
 * namespace's when namespace is not NULL/""), as a new JSON array of copies
 * of their PolicyRule objects (SelfSubjectRulesReview's material; copies, so
 * that no thread touches the shared policy's reference counts). NULL when out
 * of memory.
 */
json_t *ck_rbac_rules_for(const struct ck_rbac_policy *policy, const struct ck_auth_user *user,
                          const char *namespace);

/*
 * True when the rules in owner (a PolicyRule array) cover every permission
 * of the rules in servant (Kubernetes' validation.Covers). When not, and
 * ret_missing is given, it gets a new array of the uncovered atomic rules.
 */
bool ck_rbac_rules_cover(const json_t *owner, const json_t *servant, json_t **ret_missing);

/*
 * The escalation check on writing a Role (namespace set) or ClusterRole
 * (namespace NULL) whose rules are `rules`: allowed when user is in
 * system:masters, may `escalate` that role, or already holds every rule
 * there. Else CK_EPERM with Kubernetes' message: user "x" (groups=[...]) is
 * attempting to grant RBAC permissions not currently held: ...
 */
int ck_rbac_check_role_write(const struct ck_rbac_policy *policy, const struct ck_auth_user *user,
                             const char *namespace, const char *role_name, const json_t *rules,
                             struct ck_err *reterr);

/*
 * The escalation check on writing a RoleBinding (namespace set) or
 * ClusterRoleBinding: allowed when user is in system:masters, may `bind` the
 * roleRef, or holds every rule of the referenced role (where the binding
 * applies). A roleRef to a missing role is CK_ENOENT.
 */
int ck_rbac_check_binding_write(const struct ck_rbac_policy *policy,
                                const struct ck_auth_user *user, const char *namespace,
                                const json_t *role_ref, struct ck_err *reterr);

/*
 * ClusterRole aggregation (the clusterrole-aggregation controller's step):
 * the union, without duplicates and in order, of the rules of the
 * ClusterRoles in cluster_roles whose labels match one of role's
 * aggregationRule.clusterRoleSelectors, the role itself excluded. A new
 * array; NULL when role has no aggregationRule or memory runs out.
 */
json_t *ck_rbac_aggregate(const json_t *role, const json_t *cluster_roles);

/* ---- bootstrap policy (bootstrap.c) --------------------------------------- */

/*
 * The bootstrap ClusterRoles and ClusterRoleBindings (Kubernetes 1.32's for
 * what ckube serves, plus ckube's components' roles), as new arrays of API
 * objects the caller owns. 0, CK_ENOMEM.
 */
int ck_rbac_bootstrap(json_t **ret_cluster_roles, json_t **ret_cluster_role_bindings,
                      struct ck_err *reterr);

/* ---- PKI (pki.c) ----------------------------------------------------------- */

/* File names under the PKI directory. */
#define CK_PKI_CA_CERT     "ca.crt"
#define CK_PKI_CA_KEY      "ca.key"
#define CK_PKI_SERVER_CERT "apiserver.crt"
#define CK_PKI_SERVER_KEY  "apiserver.key"
#define CK_PKI_ADMIN_CERT  "admin.crt"
#define CK_PKI_ADMIN_KEY   "admin.key"
#define CK_PKI_SA_KEY      "sa.key"
/* kubeadm's front proxy: its own CA and the client certificate it signs */
#define CK_PKI_FRONT_PROXY_CA_CERT     "front-proxy-ca.crt"
#define CK_PKI_FRONT_PROXY_CA_KEY      "front-proxy-ca.key"
#define CK_PKI_FRONT_PROXY_CLIENT_CERT "front-proxy-client.crt"
#define CK_PKI_FRONT_PROXY_CLIENT_KEY  "front-proxy-client.key"

struct ck_pki_options {
    const char *dir;            /* created 0700 when missing */
    const char *listen_address; /* a host name or IP literal, added to the SANs */
    const char *const *sans;    /* extra SANs (--tls-san): IPs or DNS names */
    size_t n_sans;
    long long now;          /* Unix seconds; 0 for the clock */
    long long renew_before; /* renew a leaf expiring within this; 0 for 30 days */
    /* A user's own files instead of generated ones (each may be NULL). */
    const char *tls_cert_file;
    const char *tls_private_key_file;
    const char *client_ca_file;
};

/* Where the files the server uses are; the strings belong to the struct. */
struct ck_pki {
    char *ca_cert;     /* the CA clients verify the server with (NULL with own cert and no CA) */
    char *client_ca;   /* the CA client certificates are verified against */
    char *server_cert; /* serving certificate and key */
    char *server_key;
    char *admin_cert; /* NULL when the client CA is the user's own */
    char *admin_key;
    char *sa_key; /* the service-account signing key */
    int created;  /* how many files this call wrote (0 on a plain reuse) */
};

/*
 * Creates what is missing, renews what is near expiry or no longer valid
 * for the SANs asked for (the serving certificate when the listen address
 * changed), and checks what it reuses: a user's certificate must load with
 * its key. Certificate keys are ECDSA P-256, the service-account key RSA
 * 2048 (RS256); keys are written 0600; a CA lives ten years, leaves one year. Fills *ret (release
 * it with ck_pki_release).
 */
int ck_pki_ensure(const struct ck_pki_options *opts, struct ck_pki *ret, struct ck_err *reterr);

/*
 * A client certificate for a component (CN=cn, O=each of orgs) signed by the
 * PKI's CA into <dir>/<file_base>.crt and .key, created or renewed like the
 * admin's. Needs the generated CA (not a user's client CA).
 */
int ck_pki_client_cert(const struct ck_pki_options *opts, const char *file_base, const char *cn,
                       const char *const *orgs, size_t n_orgs, struct ck_err *reterr);

/*
 * kubeadm's front-proxy CA (CN front-proxy-ca, apart from the client CA)
 * and the client certificate it signs (CN front-proxy-client) in opts->dir,
 * created or renewed as the others are. 0 or an error.
 */
int ck_pki_front_proxy(const struct ck_pki_options *opts, struct ck_err *reterr);

void ck_pki_release(struct ck_pki *pki);

#endif /* CKUBE_AUTH_H */
