/*
 * test_file.c - reading whole files: contents and length (binary, empty), a missing
 * file, the cap (at it and one past it), allocation failure.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reads_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_and_out_of_memory, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
