/*
 * helpers.c - what every file of the library shares: filling its error struct,
 * logging through the gate's callback, and the pair arrays the sources build.
 * (Buffers, ParseBool and %q come from libckube-util.)
 *
 * Threading: ck__fg_errf and the pair builder work on caller-owned structs;
 * ck__fg_logf calls the gate's log callback on the calling thread.
 *
 * Tested through every test under tests/featuregate/: each error and log
 * line those tests check is built here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int ck__fg_errf(struct ck_fg_err *e, int code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
        va_end(ap);
        e->code = code;
    }
    return code;
}

void ck__fg_logf(const struct ck_fg_gate *g, int v, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    if (!g || !g->log)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    g->log(g->log_ud, v, line);
}

int ck__fg_pairs_add(struct ck__fg_pairs *p, const char *name, size_t namelen, bool value)
{
    if (p->n == p->cap) {
        size_t ncap = p->cap ? p->cap * 2 : 8;
        struct ck_fg_pair *nv = realloc(p->v, ncap * sizeof(*nv));
        if (!nv)
            return CK_FG_ENOMEM;
        p->v = nv;
        size_t *no = realloc(p->off, ncap * sizeof(*no));
        if (!no)
            return CK_FG_ENOMEM;
        p->off = no;
        p->cap = ncap;
    }
    p->off[p->n] = p->names.len;
    if (ck__buf_add(&p->names, name, namelen) < 0 || ck__buf_add(&p->names, "", 1) < 0)
        return CK_FG_ENOMEM;
    p->v[p->n].name = NULL;
    p->v[p->n].value = value;
    p->n++;
    return 0;
}

int ck__fg_pairs_finish(struct ck__fg_pairs *p, int rc, struct ck_fg_pair **ret, size_t *ret_n,
                        char **ret_buf)
{
    if (rc < 0) {
        free(p->v);
        free(p->off);
        free(p->names.p);
        memset(p, 0, sizeof(*p));
        return rc;
    }
    for (size_t i = 0; i < p->n; i++)
        p->v[i].name = p->names.p + p->off[i];
    free(p->off);
    *ret = p->v;
    *ret_n = p->n;
    *ret_buf = p->names.p;
    memset(p, 0, sizeof(*p));
    return 0;
}
