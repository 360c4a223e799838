/*
 * test_process.c - tests for the process runtime in lib/agent/process.c: a command's
 * output lands in the CRI log format with its stream, its exit code in the exit file;
 * the environment and working directory are the spec's; a command that does not exist
 * fails to start with the reason; SIGTERM to the group ends the container with 143 and
 * SIGKILL with 137; a pid whose start time differs is not taken for the container.
 * Every process started is killed and reaped before the test ends.
 */
#include "cktest.h"

#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckube/agent.h"

struct scratch {
    char dir[64], log[128], exit[128];
};

static int setup(void **state)
{
    struct scratch *s = calloc(1, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "/tmp/ckube-proc-XXXXXX");
    if (!mkdtemp(s->dir))
        return -1;
    snprintf(s->log, sizeof(s->log), "%s/log", s->dir);
    snprintf(s->exit, sizeof(s->exit), "%s/exit", s->dir);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    struct scratch *s = *state;
    unlink(s->log);
    unlink(s->exit);
    rmdir(s->dir);
    free(s);
    return 0;
}

/* Waits (10 s at most) for the exit file; reaps the shim. */
static struct ck_proc_exit wait_exit(const struct scratch *s, const struct ck_proc *p)
{
    struct ck_proc_exit e = {-1, -1, 0};
    for (int i = 0; i < 1000 && ck_proc_read_exit(s->exit, &e) != 0; i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    waitpid(p->shim, NULL, 0);
    return e;
}

static char *slurp(const char *path)
{
    static char buf[8192];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    return buf;
}

static void test_output_in_cri_format_and_exit_code(void **state)
{
    struct scratch *s = *state;
    char *argv[] = {"sh", "-c", "echo out-$X; echo err >&2; pwd; printf partial; exit 7", NULL};
    char *envp[] = {"X=1", "PATH=/usr/bin:/bin", NULL};
    struct ck_proc_spec spec = {argv, envp, s->dir, s->log, s->exit};
    struct ck_proc p;
    struct ck_err err = {0};
    assert_int_equal(ck_proc_start(&spec, &p, &err), 0);
    assert_true(p.pid > 0);
    struct ck_proc_exit e = wait_exit(s, &p);
    assert_int_equal(e.code, 7);
    assert_int_equal(e.signal, 0);
    assert_true(e.finished_ns > 0);
    const char *log = slurp(s->log);
    regex_t re;
    assert_int_equal(regcomp(&re,
                             "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{9}Z "
                             "stdout F out-1$",
                             REG_EXTENDED | REG_NEWLINE),
                     0);
    assert_int_equal(regexec(&re, log, 0, NULL, 0), 0);
    regfree(&re);
    assert_non_null(strstr(log, " stderr F err\n"));
    char want[128];
    snprintf(want, sizeof(want), " stdout F %s\n", s->dir);
    assert_non_null(strstr(log, want));
    assert_non_null(strstr(log, " stdout F partial\n")); /* the last line, unterminated */
}

static void test_a_missing_command_fails_with_the_reason(void **state)
{
    struct scratch *s = *state;
    char *argv[] = {"/nonexistent/ckube-no-such-command", NULL};
    char *envp[] = {NULL};
    struct ck_proc_spec spec = {argv, envp, NULL, s->log, s->exit};
    struct ck_proc p;
    struct ck_err err = {0};
    assert_int_equal(ck_proc_start(&spec, &p, &err), CK_EIO);
    assert_non_null(strstr(err.msg, "No such file or directory"));
    assert_int_equal(ck_proc_read_exit(s->exit, &(struct ck_proc_exit){0}), CK_ENOENT);
}

static void test_sigterm_and_sigkill_to_the_group(void **state)
{
    struct scratch *s = *state;
    char *argv[] = {"sh", "-c", "sleep 100 & echo $!; sleep 100", NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    struct ck_proc_spec spec = {argv, envp, NULL, s->log, s->exit};
    struct ck_proc p;
    assert_int_equal(ck_proc_start(&spec, &p, NULL), 0);
    for (int i = 0; i < 500 && !strstr(slurp(s->log), " stdout F "); i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    const char *line = strstr(slurp(s->log), " stdout F ");
    assert_non_null(line);
    int background = atoi(line + 10);
    assert_true(background > 0);
    assert_true(ck_proc_alive(p.pid, p.started_ns));
    assert_false(ck_proc_alive(p.pid, p.started_ns + 1)); /* a reused pid is not ours */
    assert_int_equal(ck_proc_signal(p.pid, SIGTERM), 0);
    struct ck_proc_exit e = wait_exit(s, &p);
    assert_int_equal(e.code, 143);
    assert_int_equal(e.signal, SIGTERM);
    /* the background sleep was in the group: gone too (or a zombie its new parent reaps) */
    bool ended = false;
    for (int i = 0; i < 200 && !ended; i++) {
        char path[64], stat[256] = "";
        snprintf(path, sizeof(path), "/proc/%d/stat", background);
        FILE *f = fopen(path, "r");
        if (f && fgets(stat, sizeof(stat), f) == NULL)
            stat[0] = 0;
        if (f)
            fclose(f);
        const char *paren = strrchr(stat, ')');
        ended = !f || (paren && paren[2] == 'Z');
        if (!ended)
            nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    assert_true(ended);

    char *trap[] = {"sh", "-c", "trap '' TERM; sleep 100", NULL};
    spec.argv = trap;
    assert_int_equal(ck_proc_start(&spec, &p, NULL), 0);
    nanosleep(&(struct timespec){0, 100000000}, NULL);
    ck_proc_signal(p.pid, SIGTERM);
    ck_proc_signal(p.pid, SIGKILL);
    e = wait_exit(s, &p);
    assert_int_equal(e.code, 137);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_output_in_cri_format_and_exit_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_missing_command_fails_with_the_reason, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_and_sigkill_to_the_group, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
