/*
 * fuzz_request_path.c - arbitrary request targets (path and query, still
 * percent-encoded, as a client sends them) through the path check, the
 * router and the name validation of lib/apiserver/route.c.
 *
 * Invariants: a target the check accepts decodes (libmicrohttpd's decoder,
 * as the server gets it) to a path without NUL, so no name is cut short;
 * whatever the router makes of it has no '/' in a name or namespace; and
 * the router never fails on an accepted path in any other way than "not
 * found".
 */
#include <microhttpd.h> /* MHD_http_unescape, as route.c decodes */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/apiserver/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *target = malloc(size + 1);
    if (!target)
        return 0;
    memcpy(target, data, size);
    target[size] = '\0';
    if (strlen(target) != size) { /* a NUL on the wire never reaches us as one */
        free(target);
        return 0;
    }
    struct ck_err err = {0};
    if (ck__path_check(target, &err) == 0) {
        target[strcspn(target, "?")] = '\0';
        size_t decoded = MHD_http_unescape(target);
        if (strlen(target) != decoded)
            abort(); /* an accepted path decoded to a NUL */
        struct ck__target t;
        int r = ck__route(target, &t);
        if (r != 0 && r != CK_ENOENT)
            abort();
        if (r == 0) {
            if (strchr(t.name, '/') || strchr(t.namespace, '/') || !t.kind)
                abort();
            struct ck_err name_err = {0};
            if (ck__check_name_segment(t.name, &name_err) == 0 && strchr(t.name, '%'))
                abort();
            ck_err_release(&name_err);
        }
    }
    ck_err_release(&err);
    free(target);
    return 0;
}
