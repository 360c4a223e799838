/*
 * test_file.c - reading whole files: contents and length (binary, empty), a missing
 * file, the cap (at it and one past it), allocation failure; removing a tree under a
 * directory: all of it goes, symlinks in it (to a directory and a file outside, and one
 * named as the tree itself) are removed as links and what they point at stays, names
 * that are not one component are refused, a missing one is -ENOENT.
 */
#include "cktest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

static char path[256];

static int setup(void **state)
{
    (void)state;
    const char *t = getenv("TMPDIR");
    snprintf(path, sizeof(path), "%s/ckube-file-XXXXXX", t ? t : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

static void write_file(const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static void test_reads_everything(void **state)
{
    (void)state;
    static char big[20000];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)(i % 251);
    write_file(big, sizeof(big));
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(ck__read_file(path, sizeof(big), &data, &len), 0); /* exactly the cap */
    assert_int_equal(len, sizeof(big));
    assert_memory_equal(data, big, sizeof(big));
    assert_int_equal(data[len], '\0');
    free(data);
    data = NULL;
    assert_int_equal(ck__read_file(path, sizeof(big) - 1, &data, &len), CK__E2BIG);
    assert_null(data);

    write_file("", 0);
    assert_int_equal(ck__read_file(path, 10, &data, &len), 0);
    assert_string_equal(data, "");
    assert_int_equal(len, 0);
    free(data);
}

static void test_missing_and_out_of_memory(void **state)
{
    (void)state;
    char *data = NULL;
    size_t len = 7;
    char missing[300];
    snprintf(missing, sizeof(missing), "%s.missing", path);
    assert_int_equal(ck__read_file(missing, 10, &data, &len), CK_ENOENT);
    assert_null(data);
    assert_int_equal(len, 7);

    write_file("hello", 5);
    ck__alloc_fail_at(1, false);
    assert_int_equal(ck__read_file(path, 10, &data, &len), CK_ENOMEM);
    ck__alloc_fail_at(0, false);
    assert_null(data);
}

/* dir/name made as a file holding "x" */
static void put(const char *dir, const char *name)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("x", f);
    fclose(f);
}

static bool exists(const char *dir, const char *name)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return lstat(p, &st) == 0;
}

static void test_remove_tree_follows_no_symlink(void **state)
{
    (void)state;
    const char *t = getenv("TMPDIR");
    char root[256], base[300], outside[300], p[512], q[512];
    snprintf(root, sizeof(root), "%s/ckube-tree-XXXXXX", t ? t : "/tmp");
    assert_non_null(mkdtemp(root));
    snprintf(base, sizeof(base), "%s/base", root);
    snprintf(outside, sizeof(outside), "%s/outside", root);
    assert_int_equal(mkdir(base, 0700), 0);
    assert_int_equal(mkdir(outside, 0700), 0);
    put(outside, "keep");
    /* base/tree: files, a subdirectory, links to a directory and a file outside */
    snprintf(p, sizeof(p), "%s/tree", base);
    assert_int_equal(mkdir(p, 0700), 0);
    put(p, "a");
    snprintf(q, sizeof(q), "%s/tree/sub", base);
    assert_int_equal(mkdir(q, 0700), 0);
    put(q, "b");
    snprintf(q, sizeof(q), "%s/tree/dir-link", base);
    assert_int_equal(symlink(outside, q), 0);
    snprintf(q, sizeof(q), "%s/tree/file-link", base);
    snprintf(p, sizeof(p), "%s/keep", outside);
    assert_int_equal(symlink(p, q), 0);
    /* a link named as a tree: the link goes, what it points at stays */
    snprintf(q, sizeof(q), "%s/linked", base);
    assert_int_equal(symlink(outside, q), 0);

    int fd = open(base, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    assert_int_equal(ck__remove_tree_at(fd, "tree"), 0);
    assert_false(exists(base, "tree"));
    assert_int_equal(ck__remove_tree_at(fd, "linked"), 0);
    assert_false(exists(base, "linked"));
    assert_true(exists(outside, "keep"));
    assert_int_equal(ck__remove_tree_at(fd, "tree"), -ENOENT);
    const char *bad[] = {"", ".", "..", "../outside", "a/b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(ck__remove_tree_at(fd, bad[i]), -EINVAL);
    assert_true(exists(outside, "keep"));
    close(fd);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(rmdir(outside), 0);
    assert_int_equal(rmdir(base), 0);
    assert_int_equal(rmdir(root), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reads_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_and_out_of_memory, setup, teardown),
        cmocka_unit_test(test_remove_tree_follows_no_symlink),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
