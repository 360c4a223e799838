/*
 * listwatch.c - the list/watch source over the REST client (client-go tools/cache
 * listwatch.go, NewListWatchFromClient): what an informer made from a client and a
 * resource reads through. The reflector only knows struct ck_list_watch, so anything
 * else that lists and watches (a fake in tests/client/test_reflector.c) can take its
 * place.
 *
 * Threading: the functions keep no state; the client is thread-safe.
 * Tests: tests/client/test_informer.c runs every informer through it against a real
 * API server.
 *
 * Tested through tests/client/test_informer.c (informers list and watch a
 * real server through it); the reflector's own test uses a fake instead.
 */
#include "ckube/informer.h"
#include "internal.h"

static int rest_list(void *ctx, const struct ck_list_options *opts, json_t **ret_list,
                     struct ck_err *reterr)
{
    const struct ck_rest_list_watch *rlw = ctx;
    return ck_rest_list(rlw->client, rlw->res, rlw->namespace, opts, ret_list, reterr);
}

static int rest_watch(void *ctx, const struct ck_list_options *opts, ck_watch_func fn, void *arg,
                      const atomic_bool *stop, struct ck_err *reterr)
{
    const struct ck_rest_list_watch *rlw = ctx;
    return ck_rest_watch(rlw->client, rlw->res, rlw->namespace, opts, fn, arg, stop, reterr);
}

void ck_rest_list_watch_init(struct ck_rest_list_watch *rlw, struct ck_rest *client,
                             const struct ck_resource *res, const char *namespace)
{
    *rlw = (struct ck_rest_list_watch){
        .lw = {.list = rest_list, .watch = rest_watch, .ctx = rlw},
        .client = client,
        .res = res,
        .namespace = namespace,
    };
}
