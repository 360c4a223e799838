/*
 * kubeconfig.c - writes the kubeconfig that points kubectl at this server.
 *
 * The file is JSON (every kubeconfig reader accepts it, as YAML is a superset
 * of JSON) with one cluster, one user and one context, all named "ckube",
 * and the context's namespace "default". With TLS the cluster carries the
 * CA (certificate-authority-data) and the user the admin client certificate
 * and key (client-certificate-data, client-key-data), so the file is
 * written 0600. It is written with ck__write_file_atomic(): a fresh
 * temporary file that no planted symlink can redirect, fsync'ed and renamed
 * into place, so a reader never sees half a file.
 *
 * No test of its own: tests/apiserver/test_server.c
 * (test_kubeconfig_points_at_the_bound_port) reads back what it writes and
 * checks the error for a directory that does not exist; the e2e tests
 * (tests/e2e/lib.sh) point kubectl at it.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckube/apiserver.h"
#include "ckube/internal/util.h"
#include "internal.h"

/* Sets obj[key] to the base64 of the file at path. 0, or a negative code with reterr. */
static int set_file_data(json_t *obj, const char *key, const char *path, struct ck_err *reterr)
{
    char *text = NULL;
    size_t len = 0;
    int r = ck__read_file(path, 1024 * 1024, &text, &len);
    if (r < 0)
        return ck_err_set(reterr, CK_EIO, "cannot read %s: %s", path,
                          r == CK__E2BIG ? "too large" : strerror(-r));
    char *b64 = ck_base64_encode(text, len);
    free(text);
    if (!b64 || json_object_set_new(obj, key, json_string(b64)) < 0) {
        free(b64);
        return ck_err_no_memory(reterr);
    }
    free(b64);
    return 0;
}

/* The CA and admin credentials of a TLS server, into the cluster and user entries. */
static int add_credentials(const struct ck_pki *pki, json_t *config, struct ck_err *reterr)
{
    json_t *cluster =
        json_object_get(json_array_get(json_object_get(config, "clusters"), 0), "cluster");
    json_t *user = json_object_get(json_array_get(json_object_get(config, "users"), 0), "user");
    int r = 0;
    if (pki->ca_cert)
        r = set_file_data(cluster, "certificate-authority-data", pki->ca_cert, reterr);
    if (r == 0 && pki->admin_cert)
        r = set_file_data(user, "client-certificate-data", pki->admin_cert, reterr);
    if (r == 0 && pki->admin_key)
        r = set_file_data(user, "client-key-data", pki->admin_key, reterr);
    return r;
}

int ck_apiserver_write_kubeconfig(const struct ck_apiserver *server, const char *path,
                                  struct ck_err *reterr)
{
    const char *url = ck_apiserver_url(server);
    json_t *config =
        json_pack("{s:s, s:s, s:[{s:s, s:{s:s}}], s:[{s:s, s:{}}], s:[{s:s, s:{s:s, s:s, s:s}}], "
                  "s:s, s:{}}",
                  "apiVersion", "v1", "kind", "Config", "clusters", "name", "ckube", "cluster",
                  "server", url, "users", "name", "ckube", "user", "contexts", "name", "ckube",
                  "context", "cluster", "ckube", "user", "ckube", "namespace", "default",
                  "current-context", "ckube", "preferences");
    if (!config)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    const struct ck_pki *pki = ck__auth_pki(server->auth);
    if (pki) {
        int r = add_credentials(pki, config, reterr);
        if (r < 0) {
            json_decref(config);
            return r;
        }
    }

    /* 0600: the file may hold a private key */
    char *text = ck__json_dumps(config, JSON_INDENT(2) | JSON_PRESERVE_ORDER, NULL);
    json_decref(config);
    if (!text)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int r = ck__write_file_atomic(path, text, strlen(text), 0600);
    free(text);
    if (r == CK_ENOMEM)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r < 0)
        return ck_err_set(reterr, CK_EIO, "cannot write %s: %s", path, strerror(-r));
    return 0;
}
