/*
 * alloc.c - the allocation calls of every ckube library, with a failure hook.
 *
 * ck__malloc and friends are malloc and friends, except that a test can make the
 * Nth call from now fail (SQLite's faultsim), so that allocation failure is an
 * ordinary test. The hook counts calls in atomics: it may be armed while other
 * threads allocate (an API server test fails one request's allocation and then
 * checks that the server still answers).
 *
 * Tested by tests/util/test_strmap.c (the hook itself) and by every
 * allocation-failure test that arms it.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"

static atomic_ulong alloc_calls;
static atomic_ulong alloc_fail_at; /* 0 = off */
static atomic_bool alloc_sticky;

unsigned long ck__alloc_fail_at(unsigned long n, bool sticky)
{
    unsigned long made = atomic_exchange(&alloc_calls, 0);
    atomic_store(&alloc_sticky, sticky);
    atomic_store(&alloc_fail_at, n);
    return made;
}

static bool should_fail(void)
{
    unsigned long at = atomic_load_explicit(&alloc_fail_at, memory_order_relaxed);
    if (!at)
        return false;
    unsigned long call = atomic_fetch_add(&alloc_calls, 1) + 1;
    return call == at || (call > at && atomic_load(&alloc_sticky));
}

void *ck__malloc(size_t size)
{
    return should_fail() ? NULL : malloc(size);
}

void *ck__calloc(size_t n, size_t size)
{
    return should_fail() ? NULL : calloc(n, size);
}

void *ck__realloc(void *p, size_t size)
{
    return should_fail() ? NULL : realloc(p, size);
}

char *ck__strdup(const char *s)
{
    size_t len = strlen(s) + 1;
    char *copy = ck__malloc(len);
    if (copy)
        memcpy(copy, s, len);
    return copy;
}
