/*
 * arena.c - bump allocation for CEL programs and evaluations.
 *
 * A program's syntax tree and an evaluation's values are many small immutable pieces
 * that die together, so they come from chunks freed in one call (nginx's pools). An
 * arena may carry a cap: an evaluation's is CK_CEL_MEMORY_LIMIT, which with the cost
 * budget bounds what any expression can take. Not thread-safe: one owner.
 */
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define CHUNK_SIZE 8192

struct ck__cel_chunk {
    struct ck__cel_chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

void *ck__cel_alloc(struct ck__cel_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    if (a->limit && (n > a->limit || a->used > a->limit - n))
        return NULL;
    struct ck__cel_chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > CHUNK_SIZE / 4 ? n : CHUNK_SIZE;
        c = ck__malloc(sizeof(*c) + size);
        if (!c)
            return NULL;
        c->size = size;
        c->used = 0;
        if (size == n && a->head) {
            /* a big piece: keep filling the current chunk afterwards */
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
    }
    void *p = c->data + c->used;
    c->used += n;
    a->used += n;
    memset(p, 0, n);
    return p;
}

char *ck__cel_strndup(struct ck__cel_arena *a, const char *s, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *p = ck__cel_alloc(a, n + 1);
    if (p && n)
        memcpy(p, s, n);
    return p;
}

void ck__cel_arena_release(struct ck__cel_arena *a)
{
    struct ck__cel_chunk *c = a->head;
    while (c) {
        struct ck__cel_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used = 0;
}
