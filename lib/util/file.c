/*
 * file.c - reading a whole small file (a kubeconfig, a token file, a feature gate
 * config or list) into memory, with a cap, since such files come from users and a
 * mistaken path may name something huge.
 *
 * Threading: no state.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

int ck__read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno ? -errno : CK_EIO;
    struct ck__buf b = {.max = max};
    char chunk[8192];
    size_t got;
    int r = 0;
    while (r == 0 && (got = fread(chunk, 1, sizeof(chunk), f)) > 0)
        r = ck__buf_add(&b, chunk, got);
    if (r == 0 && ferror(f))
        r = CK_EIO;
    fclose(f);
    if (r == 0 && !b.p)
        r = ck__buf_add(&b, "", 0); /* an empty file is an empty string */
    if (r < 0) {
        ck__buf_release(&b);
        return r;
    }
    *ret = b.p;
    *ret_len = b.len;
    return 0;
}
