/*
 * nft.c - running a transaction through libnftables.
 *
 * kube-proxy pipes its transaction text to the nft binary (knftables); we hand the same
 * text to libnftables, which nft itself is built on: one netlink batch, all or nothing.
 * The error buffer libnftables fills is captured into the caller's struct ck_err.
 *
 * Threading: each call has its own nft context, so calls may run on any thread.
 */
#include <nftables/libnftables.h>
#include <string.h>

#include "internal.h"

static int run(const char *text, bool dry_run, struct ck_err *reterr)
{
    struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);
    if (!nft)
        return ck_err_set(reterr, CK_ENOMEM, "nftables: cannot create a context");
    nft_ctx_buffer_output(nft);
    nft_ctx_buffer_error(nft);
    nft_ctx_set_dry_run(nft, dry_run);
    int r = 0;
    if (nft_run_cmd_from_buffer(nft, text) != 0) {
        const char *msg = nft_ctx_get_error_buffer(nft);
        size_t n = msg ? strlen(msg) : 0;
        while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
            n--;
        r = ck_err_set(reterr, CK_EIO, "nftables: %.*s", (int)n, n ? msg : "transaction failed");
    }
    nft_ctx_free(nft);
    return r;
}

int ck_proxy_nft_run(const char *text, bool dry_run, struct ck_err *reterr)
{
    if (!text)
        return ck_err_set(reterr, CK_EINVAL, "nftables: no transaction");
    return run(text, dry_run, reterr);
}

int ck_proxy_cleanup(struct ck_err *reterr)
{
    /* add first, so that deleting a table that is not there is no error */
    return run("add table " CK_PROXY_TABLE_FAMILY " " CK_PROXY_TABLE "\n"
               "delete table " CK_PROXY_TABLE_FAMILY " " CK_PROXY_TABLE "\n",
               false, reterr);
}
