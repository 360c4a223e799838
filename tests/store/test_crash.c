/*
 * test_crash.c - kill -9 while writing: every acknowledged write survives.
 *
 * `test_store_crash [KILLS]` (default 8; bench/store/crash.sh runs 50): each
 * round re-executes this binary as a child ("child DB FD") that opens the
 * store and writes from 4 threads; after each acknowledged put it reports
 * "key revision" on a pipe with one write(2). The parent reads a random
 * number of acknowledgements, then SIGKILLs the child in the middle of its
 * writes, drains what the child reported before dying, and reopens the
 * store: it must open cleanly, hold every acknowledged key with its value
 * and revision, and its revision must not have gone backwards.
 */
#include "cktest.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckube/store.h"

static const char *self;
static int kills = 8;

struct ack {
    char key[48];
    int64_t rev;
};

struct child_arg {
    struct ck_store *s;
    int fd;
    int id;
    int64_t base;
};

static void *child_writer(void *arg)
{
    struct child_arg *a = arg;
    for (int i = 0;; i++) {
        char k[48], line[96];
        int kl = snprintf(k, sizeof(k), "/crash/%lld/%d/%d", (long long)a->base, a->id, i);
        int64_t rev;
        struct ck_err err = {0};
        if (ck_store_put(a->s, k, (size_t)kl, k, (size_t)kl, &rev, &err) < 0) {
            fprintf(stderr, "child: put: %s\n", err.msg);
            _exit(3);
        }
        int n = snprintf(line, sizeof(line), "%s %lld\n", k, (long long)rev);
        if (write(a->fd, line, (size_t)n) != n)
            _exit(4);
    }
    return NULL;
}

static int child_main(const char *db, int fd)
{
    char url[400];
    snprintf(url, sizeof(url), "sqlite://%s", db);
    struct ck_store *s;
    struct ck_err err = {0};
    if (ck_store_open(url, NULL, &s, &err) < 0) {
        fprintf(stderr, "child: open: %s\n", err.msg);
        return 2;
    }
    int64_t base;
    if (ck_store_revisions(s, &base, NULL, &err) < 0)
        return 2;
    pthread_t th[4];
    struct child_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (struct child_arg){s, fd, i, base};
        pthread_create(&th[i], NULL, child_writer, &args[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL); /* never: the parent kills us */
    return 0;
}

/* Parses complete lines in buf[0..*n) into acks; keeps a partial tail. */
static void parse_acks(char *buf, size_t *n, struct ack **acks, size_t *n_acks, size_t *cap)
{
    char *start = buf, *nl;
    while ((nl = memchr(start, '\n', (size_t)(buf + *n - start)))) {
        *nl = '\0';
        if (*n_acks == *cap) {
            *cap = *cap ? *cap * 2 : 1024;
            *acks = realloc(*acks, *cap * sizeof(**acks));
            assert_non_null(*acks);
        }
        long long rev;
        struct ack *a = &(*acks)[*n_acks];
        assert_int_equal(sscanf(start, "%47s %lld", a->key, &rev), 2);
        a->rev = rev;
        (*n_acks)++;
        start = nl + 1;
    }
    *n -= (size_t)(start - buf);
    memmove(buf, start, *n);
}

static void test_kill9_keeps_acknowledged_writes(void **state)
{
    (void)state;
    char dir[256], db[300], url[400], fdarg[16];
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/ckube-crash-XXXXXX", t ? t : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof(db), "%s/state.db", dir);
    snprintf(url, sizeof(url), "sqlite://%s", db);
    srand((unsigned)getpid());
    int64_t last_rev = 0;
    size_t total = 0;
    for (int round = 0; round < kills; round++) {
        int pfd[2];
        assert_int_equal(pipe(pfd), 0);
        snprintf(fdarg, sizeof(fdarg), "%d", pfd[1]);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(pfd[0]);
            execl("/proc/self/exe", self, "child", db, fdarg, (char *)NULL);
            _exit(127);
        }
        close(pfd[1]);
        size_t want = 1 + (size_t)(rand() % 300);
        struct ack *acks = NULL;
        size_t n_acks = 0, cap = 0, n = 0;
        char buf[8192];
        bool killed = false;
        for (;;) {
            ssize_t r = read(pfd[0], buf + n, sizeof(buf) - n);
            if (r <= 0)
                break;
            n += (size_t)r;
            parse_acks(buf, &n, &acks, &n_acks, &cap);
            if (!killed && n_acks >= want) {
                kill(pid, SIGKILL);
                killed = true;
            }
        }
        close(pfd[0]);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFSIGNALED(status))
            fail_msg("child exited with status %d before being killed", WEXITSTATUS(status));
        assert_true(n_acks >= want);

        struct ck_store *s;
        struct ck_err err = {0};
        if (ck_store_open(url, NULL, &s, &err) < 0)
            fail_msg("round %d: store does not reopen: %s", round, err.msg);
        int64_t cur;
        assert_int_equal(ck_store_revisions(s, &cur, NULL, &err), 0);
        assert_true(cur >= last_rev);
        for (size_t i = 0; i < n_acks; i++) {
            const struct ck_kv *kv;
            size_t kl = strlen(acks[i].key);
            if (ck_store_get(s, acks[i].key, kl, 0, &kv, NULL, &err) < 0)
                fail_msg("round %d: acknowledged %s (rev %lld) is lost: %s", round, acks[i].key,
                         (long long)acks[i].rev, err.msg);
            assert_int_equal(kv->mod_revision, acks[i].rev);
            assert_int_equal(kv->value_len, kl);
            assert_memory_equal(kv->value, acks[i].key, kl);
            assert_true(cur >= acks[i].rev);
            ck_kv_unref(kv);
        }
        /* revisions acknowledged in this round all lie above the previous round's */
        for (size_t i = 0; i < n_acks; i++)
            assert_true(acks[i].rev > last_rev);
        last_rev = cur;
        total += n_acks;
        ck_store_close(s);
        free(acks);
    }
    assert_true(total >= (size_t)kills);
    print_message("%d kills, %zu acknowledged writes found after restarts\n", kills, total);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(int argc, char **argv)
{
    self = argv[0];
    if (argc == 4 && strcmp(argv[1], "child") == 0)
        return child_main(argv[2], atoi(argv[3]));
    if (argc == 2)
        kills = atoi(argv[1]);
    if (kills <= 0)
        kills = 8;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill9_keeps_acknowledged_writes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
