/*
 * memory.c - the allocator ckube's programs run on, and giving freed memory back.
 *
 * Built without sanitizers, every program links jemalloc (CKUBE_WITH_JEMALLOC,
 * set by lib/util/CMakeLists.txt): ckube's work is JSON trees, millions of small
 * blocks made and freed by many threads, and glibc's malloc spent a fifth of the
 * CPU of every process on them (docs/benchmarks/history.md, "The allocator"). Built with
 * ASan or TSan, the sanitizer's allocator is the one used, and glibc's
 * interface is kept so these functions still do something.
 *
 * jemalloc is told to run its background threads: they give pages back some
 * seconds after they were freed (its decay), also while a server is idle, where
 * otherwise purging only happens as a side effect of later allocations. Those
 * threads do not reach the blocks each thread keeps in its cache: the threads that
 * wait for work give them back themselves (ck__memory_idle), which took those of
 * an idle `ckube server` from 12 to 3 MB (docs/benchmarks.md, "Start-up and
 * idle").
 */
#include <malloc.h>

#include "ckube/internal/util.h"

#ifdef CKUBE_WITH_JEMALLOC
#include <jemalloc/jemalloc.h>

/* jemalloc reads this symbol once, at its first allocation. */
const char *malloc_conf = "background_thread:true";

#define STRINGIFY_(x) #x
#define STRINGIFY(x)  STRINGIFY_(x)

void ck__memory_setup(void)
{
}

void ck__memory_release(void)
{
    /* every arena's free pages, now, as malloc_trim(0) does for glibc's */
    mallctl("arena." STRINGIFY(MALLCTL_ARENAS_ALL) ".purge", NULL, NULL, NULL, 0);
}

void ck__memory_idle(void)
{
    mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
}

const char *ck__memory_allocator(void)
{
    return "jemalloc";
}

#else

void ck__memory_setup(void)
{
    /*
     * Blocks of 128 KiB and more (objects, list bodies, watch buffers) come
     * from mmap and go back to the system when freed. glibc otherwise raises
     * this threshold after each such free, and large buffers then fragment the
     * heap: 1,000 watchers that never read peaked at 348 MiB instead of
     * 252 MiB (docs/benchmarks/history.md, "Hostile clients").
     */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

void ck__memory_release(void)
{
    malloc_trim(0);
}

void ck__memory_idle(void)
{
}

const char *ck__memory_allocator(void)
{
    return "libc";
}

#endif
