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
static _Thread_local unsigned long failures_here; /* allocations that failed on this thread */
static _Thread_local bool hook_paused;            /* the hook fails nothing on this thread */
static atomic_ulong alloc_fail_at;                /* 0 = off */
static atomic_bool alloc_sticky;

unsigned long ck__alloc_fail_at(unsigned long n, bool sticky)
{
    unsigned long made = atomic_exchange(&alloc_calls, 0);
    atomic_store(&alloc_sticky, sticky);
    atomic_store(&alloc_fail_at, n);
    return made;
}

bool ck__alloc_hook_pause(bool pause)
{
    bool was = hook_paused;
    hook_paused = pause;
    return was;
}

static bool should_fail(void)
{
    unsigned long at = atomic_load_explicit(&alloc_fail_at, memory_order_relaxed);
    if (!at || hook_paused)
        return false;
    unsigned long call = atomic_fetch_add(&alloc_calls, 1) + 1;
    return call == at || (call > at && atomic_load(&alloc_sticky));
}

/* Counts p as a failure on this thread when it is NULL; returns p. */
static void *counted(void *p)
{
    if (!p)
        failures_here++;
    return p;
}

unsigned long ck__alloc_failures(void)
{
    return failures_here;
}

void *ck__malloc(size_t size)
{
    return counted(should_fail() ? NULL : malloc(size ? size : 1));
}

void *ck__calloc(size_t n, size_t size)
{
    return counted(should_fail() ? NULL : calloc(n ? n : 1, size ? size : 1));
}

void *ck__realloc(void *p, size_t size)
{
    return counted(should_fail() ? NULL : realloc(p, size ? size : 1));
}

char *ck__strdup(const char *s)
{
    size_t len = strlen(s) + 1;
    char *copy = ck__malloc(len);
    if (copy)
        memcpy(copy, s, len);
    return copy;
}
