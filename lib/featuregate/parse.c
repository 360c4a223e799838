/*
 * parse.c - the --feature-gates string (S1).
 *
 * Mirrors featureGate.Set: split on ',', skip zero-length pieces (a piece of
 * spaces is not skipped), split each at the first '=', trim name and value,
 * parse the value with Go's strconv.ParseBool. Duplicates are kept in order,
 * so applying the pairs in order makes the last occurrence win.
 * Threading: pure function.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static void trim(const char **b, const char **e)
{
    while (*b < *e && is_space(**b))
        (*b)++;
    while (*e > *b && is_space((*e)[-1]))
        (*e)--;
}

int ck_fg_parse_pairs(const char *s, struct ck_fg_pair **ret, size_t *ret_n, char **ret_buf,
                      struct ck_fg_err *reterr)
{
    struct ck__fg_pairs p = {0};
    int rc = 0;
    const char *piece = s ? s : "";

    for (;;) {
        const char *end = strchr(piece, ',');
        if (!end)
            end = piece + strlen(piece);
        if (end > piece) {
            const char *eq = memchr(piece, '=', (size_t)(end - piece));
            const char *nb = piece, *ne = eq ? eq : end;
            trim(&nb, &ne);
            if (!eq) {
                rc = ck__fg_errf(reterr, CK_FG_EINVAL, "missing bool value for %.*s",
                                 (int)(ne - nb), nb);
                break;
            }
            const char *vb = eq + 1, *ve = end;
            trim(&vb, &ve);
            char val[64];
            bool v = false;
            size_t vlen = (size_t)(ve - vb);
            bool ok = vlen < sizeof(val);
            if (ok) {
                memcpy(val, vb, vlen);
                val[vlen] = '\0';
                ok = ck__parse_bool(val, &v);
            }
            if (!ok) {
                char *vs = strndup(vb, vlen);
                char q[300];
                ck__quote(vs ? vs : "", q, sizeof(q));
                rc = ck__fg_errf(reterr, CK_FG_EINVAL,
                                 "invalid value of %.*s=%.*s, err: strconv.ParseBool: parsing %s: "
                                 "invalid syntax",
                                 (int)(ne - nb), nb, (int)vlen, vb, q);
                free(vs);
                break;
            }
            rc = ck__fg_pairs_add(&p, nb, (size_t)(ne - nb), v);
            if (rc < 0) {
                ck__fg_errf(reterr, rc, "out of memory");
                break;
            }
        }
        if (!*end)
            break;
        piece = end + 1;
    }
    return ck__fg_pairs_finish(&p, rc, ret, ret_n, ret_buf);
}
