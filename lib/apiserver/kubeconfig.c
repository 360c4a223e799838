/*
 * kubeconfig.c - writes the kubeconfig that points kubectl at this server.
 *
 * The file is JSON (every kubeconfig reader accepts it, as YAML is a superset
 * of JSON) with one cluster, one user and one context, all named "ckube",
 * and the context's namespace "default". It is written to a temporary file
 * and renamed into place, so a reader never sees half a file.
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

#include "ckube/apiserver.h"
#include "ckube/internal/util.h"

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

    size_t tmp_len = strlen(path) + 8;
    char *tmp = ck__malloc(tmp_len);
    if (!tmp) {
        json_decref(config);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    snprintf(tmp, tmp_len, "%s.tmp", path);
    int r = 0;
    if (json_dump_file(config, tmp, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
        r = ck_err_set(reterr, CK_EIO, "cannot write %s: %s", tmp, strerror(errno));
    else if (rename(tmp, path) != 0)
        r = ck_err_set(reterr, CK_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (r < 0)
        remove(tmp);
    free(tmp);
    json_decref(config);
    return r;
}
