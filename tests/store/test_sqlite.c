/*
 * test_sqlite.c - what only the SQLite backend has: its file. A foreign,
 * corrupt or newer-schema file is refused with a clear error and left
 * byte-for-byte untouched; a store keeps its revision across reopen; many
 * concurrent writers (group commit) each get their own revision and every
 * acknowledged write is there.
 */
#include "cktest.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storetest.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/ckube-sqlite-XXXXXX", t ? t : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static void write_file(const char *path, const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* Reads the whole file (caller frees); *n its size. */
static char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)len + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return p;
}

static void assert_refused(const char *path, int code, const char *words)
{
    size_t n0, n1;
    char *before = read_file(path, &n0);
    char url[400];
    snprintf(url, sizeof(url), "sqlite://%s", path);
    struct ck_store *s = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_store_open(url, NULL, &s, &err), code);
    assert_null(s);
    if (!strstr(err.msg, words))
        fail_msg("error \"%s\" lacks \"%s\"", err.msg, words);
    char *after = read_file(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);
}

static void test_foreign_text_file_is_refused_untouched(void **state)
{
    (void)state;
    char p[300];
    path_of(p, sizeof(p), "notes.txt");
    const char text[] = "my precious notes, not a database at all\n";
    write_file(p, text, sizeof(text) - 1);
    assert_refused(p, CK_EINVAL, "not a ckube store");
}

static void test_foreign_sqlite_database_is_refused(void **state)
{
    (void)state;
    char p[300];
    path_of(p, sizeof(p), "other.db");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db, "CREATE TABLE t (x); INSERT INTO t VALUES (1);", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    assert_refused(p, CK_EINVAL, "not a ckube store");
}

/* Makes a store with one write in the file NAME of the test directory; its path in p. */
static void make_store(char *p, size_t cap, const char *name, int64_t *ret_rev)
{
    path_of(p, cap, name);
    char url[400];
    snprintf(url, sizeof(url), "sqlite://%s", p);
    struct ck_store *s;
    struct ck_err err = {0};
    assert_int_equal(ck_store_open(url, NULL, &s, &err), 0);
    assert_string_equal(ck_store_backend(s), "sqlite");
    assert_int_equal(ck_store_put(s, "/a", 2, "1", 1, ret_rev, &err), 0);
    ck_store_close(s);
}

static void test_newer_schema_is_refused(void **state)
{
    (void)state;
    char p[300];
    int64_t rev;
    make_store(p, sizeof(p), "newer.db", &rev);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db, "UPDATE meta SET value = 99 WHERE name = 'schema'", NULL, NULL, NULL),
        SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    assert_refused(p, CK_EINVAL, "newer than this ckube");
}

static void test_corrupt_file_is_refused_untouched(void **state)
{
    (void)state;
    char p[300];
    int64_t rev;
    make_store(p, sizeof(p), "corrupt.db", &rev);
    /* Overwrite everything after the first page with garbage. */
    size_t n;
    char *data = read_file(p, &n);
    assert_true(n > 4096);
    for (size_t i = 4096; i < n; i++)
        data[i] = (char)(i * 31);
    write_file(p, data, n);
    free(data);
    assert_refused(p, CK_EIO, "corrupt");
}

static void test_reopen_keeps_revision_and_data(void **state)
{
    (void)state;
    char p[300], url[400];
    int64_t rev;
    make_store(p, sizeof(p), "reopen.db", &rev);
    snprintf(url, sizeof(url), "sqlite://%s", p);
    struct ck_store *s;
    struct ck_err err = {0};
    assert_int_equal(ck_store_open(url, NULL, &s, &err), 0);
    int64_t cur;
    const struct ck_kv *kv;
    assert_int_equal(ck_store_get(s, "/a", 2, 0, &kv, &cur, &err), 0);
    assert_int_equal(cur, rev);
    assert_int_equal(kv->mod_revision, rev);
    ck_kv_unref(kv);
    int64_t rev2;
    assert_int_equal(ck_store_put(s, "/b", 2, "2", 1, &rev2, &err), 0);
    assert_int_equal(rev2, rev + 1);
    ck_store_close(s);
    /* a missing directory is a clear error, not a crash */
    assert_int_equal(ck_store_open("sqlite:///nonexistent-dir/x/state.db", NULL, &s, &err), CK_EIO);
    assert_int_equal(ck_store_open("sqlite://", NULL, &s, &err), CK_EINVAL);
}

#define THREADS 16
#define PUTS    40

struct gc_arg {
    struct ck_store *s;
    int id;
    int64_t revs[PUTS];
    int failures;
};

static void *gc_writer(void *arg)
{
    struct gc_arg *a = arg;
    for (int i = 0; i < PUTS; i++) {
        char k[32];
        int kl = snprintf(k, sizeof(k), "/gc/%02d/%03d", a->id, i);
        struct ck_err err = {0};
        if (ck_store_create(a->s, k, (size_t)kl, k, (size_t)kl, &a->revs[i], &err) < 0)
            a->failures++;
    }
    return NULL;
}

static int cmp64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static void test_group_commit_concurrent_writers(void **state)
{
    (void)state;
    char p[300], url[400];
    path_of(p, sizeof(p), "gc.db");
    snprintf(url, sizeof(url), "sqlite://%s", p);
    struct ck_store *s;
    struct ck_err err = {0};
    assert_int_equal(ck_store_open(url, NULL, &s, &err), 0);
    int64_t start;
    assert_int_equal(ck_store_revisions(s, &start, NULL, &err), 0);
    struct collector c;
    collector_init(&c);
    struct ck_store_watch *w;
    assert_int_equal(ck_store_watch(s, "/gc/", 4, true, 0, collect, &c, &w, &err), 0);
    pthread_t th[THREADS];
    static struct gc_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (struct gc_arg){.s = s, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, gc_writer, &args[i]), 0);
    }
    int64_t all[THREADS * PUTS];
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].failures, 0);
        memcpy(all + i * PUTS, args[i].revs, sizeof(args[i].revs));
    }
    /* every write got its own revision: exactly start+1 .. start+N */
    qsort(all, THREADS * PUTS, sizeof(all[0]), cmp64);
    for (int i = 0; i < THREADS * PUTS; i++)
        assert_int_equal(all[i], start + 1 + i);
    assert_true(collector_wait(&c, &c.n, THREADS * PUTS));
    ck_store_watch_cancel(w);
    for (size_t i = 0; i < c.n; i++)
        assert_int_equal(c.events[i].revision, start + 1 + (int64_t)i);
    collector_release(&c);
    struct ck_store_range req = {.key = "/gc/", .key_len = 4, .prefix = true, .count_only = true};
    struct ck_store_range_result res;
    assert_int_equal(ck_store_range(s, &req, &res, &err), 0);
    assert_int_equal(res.count, THREADS * PUTS);
    ck_store_range_result_release(&res);
    ck_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_foreign_text_file_is_refused_untouched),
        cmocka_unit_test(test_foreign_sqlite_database_is_refused),
        cmocka_unit_test(test_newer_schema_is_refused),
        cmocka_unit_test(test_corrupt_file_is_refused_untouched),
        cmocka_unit_test(test_reopen_keeps_revision_and_data),
        cmocka_unit_test(test_group_commit_concurrent_writers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
