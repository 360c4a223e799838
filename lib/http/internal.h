/*
 * internal.h - private to lib/http; never installed.
 *
 * What the fuzz target reaches past the public API for: one connection of a
 * server fed with bytes through a bufferevent pair instead of a socket, the
 * loop run on the calling thread until it has nothing left to do.
 */
#ifndef CKUBE_HTTP_INTERNAL_H
#define CKUBE_HTTP_INTERNAL_H

#include "ckube/http.h"

/*
 * A server of one loop with no listener and no thread: only for
 * ck__http_feed(). Free it with ck_http_server_free().
 */
int ck__http_server_new_unbound(const struct ck_http_config *cfg, struct ck_http_server **ret_srv);

/*
 * Runs a plain connection (HTTP/1.1, or HTTP/2 after its preface) on the
 * server's loop, on this thread: data is what the client sends, then the
 * client's side is closed; answers are read and thrown away. Requests the
 * callback keeps are the callback's to finish. Returns the bytes answered.
 */
size_t ck__http_feed(struct ck_http_server *srv, const void *data, size_t len);

#endif /* CKUBE_HTTP_INTERNAL_H */
