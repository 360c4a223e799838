/*
 * test_runner_crash.c - a sync that crashes takes the process down loudly, never
 * silently: in a forked child, a sync calls abort(); the crash handler must name the
 * controller and the key on standard error, and the child must still die of SIGABRT.
 * Kept apart from test_runner.c because it forks (not under ThreadSanitizer).
 */
#include "cktest.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckube/controllers.h"

static int crashing_sync(struct ck_controller *c, const char *key, struct ck_err *reterr)
{
    (void)c;
    (void)reterr;
    if (strcmp(key, "ns/boom") == 0)
        abort();
    return 0;
}

static void child(int fd)
{
    dup2(fd, STDERR_FILENO);
    if (ck_runner_install_crash_handler() != 0)
        _exit(2);
    struct ck_wq_options opts = {.limiter = ck_rl_default_controller_new(NULL)};
    struct ck_controller c = {.name = "crashy", .sync = crashing_sync};
    struct ck_runner *r;
    if (ck_wq_new(&opts, &c.queue, NULL) != 0 || ck_runner_start(&c, 2, &r, NULL) != 0)
        _exit(3);
    ck_wq_add(c.queue, "ns/fine");
    ck_wq_add(c.queue, "ns/boom");
    ck_runner_stop(r); /* never returns: the sync of ns/boom aborts */
    _exit(0);
}

static void test_a_crashing_sync_is_reported_and_kills_the_process(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child(fds[1]);
    }
    close(fds[1]);
    char out[4096];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof(out) - 1 && (n = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = '\0';
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    assert_non_null(
        strstr(out, "ckube: fatal signal 6 in controller crashy while syncing key \"ns/boom\"\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_crashing_sync_is_reported_and_kills_the_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
