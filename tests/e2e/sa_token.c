/*
 * sa_token.c - test helper: prints a ServiceAccount token signed with a server's
 * ServiceAccount key, as the TokenRequest API would issue it (issuer and audience
 * https://kubernetes.default.svc.cluster.local, valid one hour), for end-to-end tests
 * that check a token works against every server sharing that key.
 *
 *   sa_token KEY_FILE NAMESPACE NAME UID
 *
 * Exit codes: 0 printed, 1 the key cannot be used, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ckube/auth.h"

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: sa_token KEY_FILE NAMESPACE NAME UID\n");
        return 2;
    }
    struct ck_err err = {0};
    struct ck_auth_sa_key *key = NULL;
    if (ck_auth_sa_key_load(argv[1], &key, &err) < 0) {
        fprintf(stderr, "sa_token: %s\n", err.msg);
        return 1;
    }
    const char *audience = "https://kubernetes.default.svc.cluster.local";
    struct ck_auth_token_request req = {
        .issuer = audience,
        .namespace = argv[2],
        .sa_name = argv[3],
        .sa_uid = argv[4],
        .audiences = &audience,
        .n_audiences = 1,
        .now = (long long)time(NULL),
        .expiration_seconds = 3600,
    };
    char *token = NULL;
    int r = ck_auth_jwt_sign(key, &req, &token, &err);
    ck_auth_sa_key_free(key);
    if (r < 0) {
        fprintf(stderr, "sa_token: %s\n", err.msg);
        return 1;
    }
    puts(token);
    free(token);
    return 0;
}
