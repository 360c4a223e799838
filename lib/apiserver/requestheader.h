/*
 * requestheader.h - the request-header authenticator of the API server
 * (requestheader.c), shared with authn_authz.c and its unit test.
 */
#ifndef CKUBE_APISERVER_REQUESTHEADER_H
#define CKUBE_APISERVER_REQUESTHEADER_H

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "ckube/apiserver.h"
#include "ckube/auth.h"
#include "req.h" /* struct ck__header */

struct ck__requestheader;

/* What a client certificate is to the authenticator. */
enum ck__proxy_cert {
    CK__PROXY_CERT_NO,      /* it does not verify against the request-header CA */
    CK__PROXY_CERT_YES,     /* a front proxy's */
    CK__PROXY_CERT_REFUSED, /* it verifies, but its common name is not an allowed name */
};

/*
 * The authenticator the config's --requestheader-* flags ask for in *ret;
 * NULL without the CA file or a username header (as kube-apiserver). 0,
 * CK_EIO (the CA file), CK_EINVAL (an empty header name), CK_ENOMEM.
 */
int ck__requestheader_new(const struct ck_apiserver_config *config, struct ck__requestheader **ret,
                          struct ck_err *reterr);
void ck__requestheader_free(struct ck__requestheader *rh);

/* The request-header CA file's PEM text, or NULL. */
const char *ck__requestheader_ca_pem(const struct ck__requestheader *rh);

/*
 * Whether the peer's chain (DER, leaf first) verifies against trust (with
 * its leaf's common name in cn when it does and cn is not NULL): 1 or 0.
 */
int ck__cert_chain_verifies(gnutls_x509_trust_list_t trust, const gnutls_datum_t *chain, unsigned n,
                            char *cn, size_t cn_size);

/* What the peer's chain is to rh; CK__PROXY_CERT_NO when rh is NULL. */
enum ck__proxy_cert ck__requestheader_check(const struct ck__requestheader *rh,
                                            const gnutls_datum_t *chain, unsigned n);

/*
 * The user a verified proxy's headers name in *ret (a new user), or NULL
 * when no username header has a value: the request is then not this
 * authenticator's. 0 or CK_ENOMEM.
 */
int ck__requestheader_user(const struct ck__requestheader *rh, const struct ck__header *headers,
                           size_t n, struct ck_auth_user **ret);

/*
 * The data of kube-system/extension-apiserver-authentication: client-ca-file
 * (when client_ca is not empty) and, with rh, the requestheader-* keys (lists
 * as JSON arrays). A new object, or NULL when out of memory.
 */
json_t *ck__requestheader_configmap_data(const struct ck__requestheader *rh, const char *client_ca);

#endif /* CKUBE_APISERVER_REQUESTHEADER_H */
