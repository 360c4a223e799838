/*
 * ckube/internal/util.h - helpers every ckube library shares; part of libckube-util.
 *
 * Unlike ckube/util.h this header is not installed and promises no stable API: it
 * is the one place the project's libraries (and their tests) take the small pieces
 * they all need from, instead of reaching into each other's private headers.
 *
 * - ck__malloc/ck__calloc/ck__realloc/ck__strdup: the allocation calls, with a test
 *   hook that makes the Nth call fail, so allocation failure is an ordinary test
 *   (SQLite's faultsim). The hook is process-wide; its counters are atomic.
 * - struct ck__strmap: a string-keyed hash map (chaining, FNV-1a, doubling). It copies
 *   keys and stores void * values it does not own. Not thread-safe: its owner locks.
 */
#ifndef CKUBE_INTERNAL_UTIL_H
#define CKUBE_INTERNAL_UTIL_H

#include <stdbool.h>
#include <stddef.h>

/* ---- allocation (alloc.c) ------------------------------------------------ */

void *ck__malloc(size_t size);
void *ck__calloc(size_t n, size_t size);
void *ck__realloc(void *p, size_t size);
char *ck__strdup(const char *s);

/*
 * Makes the nth allocation from now fail (1 = the next one), and every one after it
 * when `sticky`; 0 turns the hook off. Returns how many allocations were made since the
 * last call, so a test can loop n = 1, 2, ... until an operation succeeds.
 */
unsigned long ck__alloc_fail_at(unsigned long n, bool sticky);

/* ---- string map (strmap.c) --------------------------------------------- */

struct ck__strmap_entry {
    struct ck__strmap_entry *next;
    void *value;
    unsigned long hash;
    char key[]; /* the map's own copy */
};

struct ck__strmap {
    struct ck__strmap_entry **buckets;
    size_t nbuckets; /* a power of two, or 0 before the first insert */
    size_t len;
};

/* An empty map needs no allocation: `struct ck__strmap m = {0};` is ready to use. */
void ck__strmap_release(struct ck__strmap *m);

/* Returns the entry for key, or NULL. */
struct ck__strmap_entry *ck__strmap_find(const struct ck__strmap *m, const char *key);

/*
 * Inserts key (copied) with value, or finds it when present. Returns the entry and sets
 * *ret_created, or NULL when out of memory (the map is unchanged).
 */
struct ck__strmap_entry *ck__strmap_put(struct ck__strmap *m, const char *key, void *value,
                                        bool *ret_created);

/*
 * Inserts key, which must be absent, with `extra` zeroed bytes (16-byte aligned) inside
 * the entry itself as its value (NULL value when extra is 0): one allocation for key and
 * payload, freed with the entry. Returns the entry, or NULL when out of memory (the map
 * is unchanged).
 */
struct ck__strmap_entry *ck__strmap_insert(struct ck__strmap *m, const char *key, size_t extra);

/* Removes and frees an entry of m (and its inline payload) without hashing again. */
void ck__strmap_remove_entry(struct ck__strmap *m, struct ck__strmap_entry *e);

/* Removes key; returns its value, or NULL when absent. */
void *ck__strmap_remove(struct ck__strmap *m, const char *key);

/* Iteration: for (e = ck__strmap_next(m, NULL, &i); e; e = ck__strmap_next(m, e, &i)). */
struct ck__strmap_entry *ck__strmap_next(const struct ck__strmap *m, struct ck__strmap_entry *e,
                                         size_t *bucket);

/* ---- JSON output that is whole or nothing (json_dump.c) ------------------- */

#include <jansson.h>

/*
 * json_dumps() that never returns cut-short text: jansson 2.14's json_dumps()
 * can drop pieces of its output when an allocation fails midway and still
 * return a string, which would store or send corrupt JSON. This measures the
 * text first, then writes it into one buffer from ck__malloc. Returns the
 * NUL-terminated text (caller frees; its length in *ret_len when not NULL),
 * or NULL when out of memory or json cannot be encoded.
 */
char *ck__json_dumps(const json_t *json, size_t flags, size_t *ret_len);

#endif /* CKUBE_INTERNAL_UTIL_H */
