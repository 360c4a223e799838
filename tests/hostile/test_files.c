/*
 * test_files.c - files in the data directory against a hostile local user:
 * a symlink planted where the server writes must not redirect the write
 * (ck__write_file_atomic, the kubeconfig), files get their mode at creation,
 * and a data directory others may write into is refused
 * (ck__check_private_dir).
 */
#include "cktest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apiserver/httptest.h"
#include "ckube/internal/util.h"

static char *slurp(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    return ck__read_file(path, 1 << 20, &text, &len) == 0 ? text : NULL;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The server's kubeconfig write with a symlink planted at the temporary name it used. */
static void test_kubeconfig_ignores_planted_symlink(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-hostile-files-XXXXXX";
    struct ck_apiserver *server = test_server_start(dir);
    assert_non_null(server);
    char victim[512], planted[512], kubeconfig[512];
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", dir);
    snprintf(planted, sizeof(planted), "%s/kubeconfig.tmp", dir);
    write_text(victim, "precious\n");
    assert_int_equal(symlink(victim, planted), 0);

    struct ck_err err = {0};
    assert_int_equal(ck_apiserver_write_kubeconfig(server, kubeconfig, &err), 0);
    char *text = slurp(victim);
    assert_non_null(text);
    assert_string_equal(text, "precious\n"); /* the write did not go through the link */
    free(text);
    struct stat st;
    assert_int_equal(lstat(kubeconfig, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);

    unlink(planted);
    unlink(victim);
    unlink(kubeconfig);
    test_server_stop(server, dir);
}

/* A symlink at the target itself is replaced, never written through. */
static void test_write_replaces_symlink_at_target(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-hostile-files-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char victim[512], target[512];
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    snprintf(target, sizeof(target), "%s/ca.crt", dir);
    write_text(victim, "precious\n");
    assert_int_equal(symlink(victim, target), 0);

    mode_t old_umask = umask(0); /* the mode must not depend on the umask's help */
    int r = ck__write_file_atomic(target, "new\n", 4, 0600);
    umask(old_umask);
    assert_int_equal(r, 0);
    char *text = slurp(victim);
    assert_string_equal(text, "precious\n");
    free(text);
    text = slurp(target);
    assert_string_equal(text, "new\n");
    free(text);
    struct stat st;
    assert_int_equal(lstat(target, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    /* no temporary file is left behind */
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "test $(ls -A %s | wc -l) -eq 2", dir);
    assert_int_equal(system(cmd), 0);

    unlink(target);
    unlink(victim);
    rmdir(dir);
}

/* A file whose directory is gone: an error, and nothing written anywhere. */
static void test_write_into_missing_dir_fails(void **state)
{
    (void)state;
    int r = ck__write_file_atomic("/nonexistent-ckube-dir/kubeconfig", "x", 1, 0600);
    assert_int_equal(r, -ENOENT);
}

static void test_private_dir_check(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-hostile-files-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chmod(dir, 0700), 0);
    assert_int_equal(ck__check_private_dir(dir), 0);
    assert_int_equal(chmod(dir, 0750), 0);
    assert_int_equal(ck__check_private_dir(dir), 0);
    assert_int_equal(chmod(dir, 0770), 0); /* group-writable */
    assert_int_equal(ck__check_private_dir(dir), -EPERM);
    assert_int_equal(chmod(dir, 0777), 0);
    assert_int_equal(ck__check_private_dir(dir), -EPERM);
    assert_int_equal(chmod(dir, 0700), 0);

    char link[600], file[600];
    snprintf(link, sizeof(link), "%s-link", dir);
    assert_int_equal(symlink(dir, link), 0);
    assert_int_equal(ck__check_private_dir(link), -ENOTDIR); /* a symlink is not the dir */
    snprintf(file, sizeof(file), "%s/file", dir);
    write_text(file, "x");
    assert_int_equal(ck__check_private_dir(file), -ENOTDIR);
    assert_int_equal(ck__check_private_dir("/nonexistent-ckube-dir"), -ENOENT);
    unlink(file);
    unlink(link);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubeconfig_ignores_planted_symlink),
        cmocka_unit_test(test_write_replaces_symlink_at_target),
        cmocka_unit_test(test_write_into_missing_dir_fails),
        cmocka_unit_test(test_private_dir_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
