/*
 * scratch.h - the scratch directory of the agent's unit tests: made under /tmp with a
 * name of its own per test, and removed with everything in it when the test ends.
 * Include after cktest.h, with _GNU_SOURCE defined (nftw).
 */
#ifndef CKUBE_TESTS_AGENT_SCRATCH_H
#define CKUBE_TESTS_AGENT_SCRATCH_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* A directory and the container log and exit file paths a test uses in it. */
struct scratch {
    char dir[64], log[128], exit[128];
};

/* Makes dir as /tmp/ckube-<what>-XXXXXX; 0, or -1 when it cannot be made. */
static inline int scratch_make_dir(char *dir, size_t size, const char *what)
{
    snprintf(dir, size, "/tmp/ckube-%s-XXXXXX", what);
    return mkdtemp(dir) ? 0 : -1;
}

static inline int scratch_remove_one(const char *path, const struct stat *st, int flag,
                                     struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes dir and all it holds (without following links). */
static inline void scratch_remove_dir(const char *dir)
{
    nftw(dir, scratch_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A cmocka setup's body: a new directory with the log and exit paths named below it. */
static inline int scratch_setup(void **state, const char *what, const char *log,
                                const char *exit_file)
{
    struct scratch *s = calloc(1, sizeof(*s));
    if (!s || scratch_make_dir(s->dir, sizeof(s->dir), what) < 0) {
        free(s);
        return -1;
    }
    snprintf(s->log, sizeof(s->log), "%s/%s", s->dir, log);
    snprintf(s->exit, sizeof(s->exit), "%s/%s", s->dir, exit_file);
    *state = s;
    return 0;
}

/* Writes text to path, replacing it ("w") or after what it holds ("a"); fails the test when
 * it cannot. */
static inline void scratch_put(const char *path, const char *text, const char *mode)
{
    FILE *f = fopen(path, mode);
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The teardown that goes with scratch_setup. */
static inline int scratch_teardown(void **state)
{
    struct scratch *s = *state;
    scratch_remove_dir(s->dir);
    free(s);
    return 0;
}

#endif /* CKUBE_TESTS_AGENT_SCRATCH_H */
