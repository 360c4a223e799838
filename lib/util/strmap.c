/*
 * strmap.c - the string-keyed hash map every ckube library shares.
 *
 * The map chains entries in buckets (a power of two) and doubles when the load reaches
 * one entry per bucket; each entry holds its key inline, so an insert is one allocation.
 * Not thread-safe: every user holds its own lock around it.
 */
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"

static unsigned long hash_key(const char *key)
{
    unsigned long h = 1469598103934665603UL; /* FNV-1a, 64 bits */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 1099511628211UL;
    return h;
}

void ck__strmap_release(struct ck__strmap *m)
{
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct ck__strmap_entry *e = m->buckets[i];
        while (e) {
            struct ck__strmap_entry *next = e->next;
            free(e);
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = NULL;
    m->nbuckets = 0;
    m->len = 0;
}

struct ck__strmap_entry *ck__strmap_find(const struct ck__strmap *m, const char *key)
{
    if (!m->nbuckets)
        return NULL;
    unsigned long h = hash_key(key);
    for (struct ck__strmap_entry *e = m->buckets[h & (m->nbuckets - 1)]; e; e = e->next)
        if (e->hash == h && strcmp(e->key, key) == 0)
            return e;
    return NULL;
}

static bool grow(struct ck__strmap *m)
{
    size_t n = m->nbuckets ? m->nbuckets * 2 : 16;
    struct ck__strmap_entry **b = ck__calloc(n, sizeof(*b));
    if (!b)
        return false;
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct ck__strmap_entry *e = m->buckets[i];
        while (e) {
            struct ck__strmap_entry *next = e->next;
            size_t slot = e->hash & (n - 1);
            e->next = b[slot];
            b[slot] = e;
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
    return true;
}

struct ck__strmap_entry *ck__strmap_insert(struct ck__strmap *m, const char *key, size_t extra)
{
    /* Grow before inserting, so that a failed growth leaves the map as it was. */
    if (m->len >= m->nbuckets && !grow(m) && !m->nbuckets)
        return NULL;
    size_t klen = strlen(key) + 1;
    size_t offset = (sizeof(struct ck__strmap_entry) + klen + 15) & ~(size_t)15;
    struct ck__strmap_entry *e = ck__malloc(extra ? offset + extra : sizeof(*e) + klen);
    if (!e)
        return NULL;
    memcpy(e->key, key, klen);
    e->hash = hash_key(key);
    e->value = NULL;
    if (extra) {
        e->value = (char *)e + offset;
        memset(e->value, 0, extra);
    }
    size_t slot = e->hash & (m->nbuckets - 1);
    e->next = m->buckets[slot];
    m->buckets[slot] = e;
    m->len++;
    return e;
}

struct ck__strmap_entry *ck__strmap_put(struct ck__strmap *m, const char *key, void *value,
                                        bool *ret_created)
{
    struct ck__strmap_entry *e = ck__strmap_find(m, key);
    if (e) {
        *ret_created = false;
        return e;
    }
    e = ck__strmap_insert(m, key, 0);
    if (!e)
        return NULL;
    e->value = value;
    *ret_created = true;
    return e;
}

void ck__strmap_remove_entry(struct ck__strmap *m, struct ck__strmap_entry *e)
{
    for (struct ck__strmap_entry **pp = &m->buckets[e->hash & (m->nbuckets - 1)]; *pp;
         pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            free(e);
            m->len--;
            return;
        }
    }
}

void *ck__strmap_remove(struct ck__strmap *m, const char *key)
{
    if (!m->nbuckets)
        return NULL;
    unsigned long h = hash_key(key);
    struct ck__strmap_entry **pp = &m->buckets[h & (m->nbuckets - 1)];
    for (; *pp; pp = &(*pp)->next) {
        struct ck__strmap_entry *e = *pp;
        if (e->hash == h && strcmp(e->key, key) == 0) {
            void *value = e->value;
            *pp = e->next;
            free(e);
            m->len--;
            return value;
        }
    }
    return NULL;
}

struct ck__strmap_entry *ck__strmap_next(const struct ck__strmap *m, struct ck__strmap_entry *e,
                                         size_t *bucket)
{
    if (e && e->next)
        return e->next;
    size_t i = e ? *bucket + 1 : 0;
    for (; i < m->nbuckets; i++) {
        if (m->buckets[i]) {
            *bucket = i;
            return m->buckets[i];
        }
    }
    return NULL;
}
