/*
 * test_process.c - tests for the process runtime in lib/agent/process.c: a command's
 * output lands in the CRI log format with its stream, its exit code in the exit file;
 * the environment and working directory are the spec's; a command that does not exist
 * fails to start with the reason; SIGTERM to the group ends the container with 143 and
 * SIGKILL with 137; a pid whose start time differs is not taken for the container.
 * The log is rotated by size (LOG.<YYYYmmdd-HHMMSS>, at most max_files - 1 kept) and
 * reads back whole across the files; limits: a memory rlimit makes a big allocation fail,
 * a cgroup directory gets memory.max, cpu.max and pids.max, the container joins it, and
 * an oom_kill in memory.events is reported; the delegated-cgroup setup on a copy of
 * this process's cgroup path.
 * Every process started is killed and reaped before the test ends.
 */
#define _GNU_SOURCE /* nftw */
#include "cktest.h"

#include <dirent.h>
#include <ftw.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckube/agent.h"
#include "scratch.h"

static int setup(void **state)
{
    return scratch_setup(state, "proc", "log", "exit");
}

static int teardown(void **state)
{
    return scratch_teardown(state);
}

/* Waits (10 s at most) for the exit file; reaps the shim. */
static struct ck_proc_exit wait_exit(const struct scratch *s, const struct ck_proc *p)
{
    struct ck_proc_exit e = {-1, -1, 0, false};
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
    struct ck_proc_spec spec = {
        .argv = argv, .envp = envp, .dir = s->dir, .log_path = s->log, .exit_path = s->exit};
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
    struct ck_proc_spec spec = {
        .argv = argv, .envp = envp, .log_path = s->log, .exit_path = s->exit};
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
    struct ck_proc_spec spec = {
        .argv = argv, .envp = envp, .log_path = s->log, .exit_path = s->exit};
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

/* The names in s->dir that start with "log.", how many (their names in names). */
static int rotated(const struct scratch *s, char names[][64], int max)
{
    DIR *d = opendir(s->dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, "log.", 4) == 0 && n < max)
            snprintf(names[n++], 64, "%.63s", e->d_name);
    if (d)
        closedir(d);
    return n;
}

static void test_the_log_is_rotated_by_size_and_reads_back_whole(void **state)
{
    struct scratch *s = *state;
    /* four bursts of 30 lines of ~100 bytes, a second apart: rotations within a second */
    char *argv[] = {
        "sh", "-c",
        "for b in 1 2 3 4; do i=0; while [ $i -lt 30 ]; do "
        "echo \"line $b-$i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"; "
        "i=$((i + 1)); done; sleep 1.1; done",
        NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    struct ck_proc_spec spec = {.argv = argv,
                                .envp = envp,
                                .log_path = s->log,
                                .exit_path = s->exit,
                                .log_max_size = 2000,
                                .log_max_files = 3};
    struct ck_proc p;
    assert_int_equal(ck_proc_start(&spec, &p, NULL), 0);
    struct ck_proc_exit e = wait_exit(s, &p);
    assert_int_equal(e.code, 0);
    char names[16][64];
    int n = rotated(s, names, 16);
    assert_true(n >= 1);
    assert_true(n <= 2); /* max_files 3: the current file and two rotated ones */
    regex_t re;
    assert_int_equal(
        regcomp(&re, "^log\\.[0-9]{8}-[0-9]{6}(\\.[0-9]{3})?$", REG_EXTENDED | REG_NOSUB), 0);
    for (int i = 0; i < n; i++) {
        assert_int_equal(regexec(&re, names[i], 0, NULL, 0), 0);
        char path[256];
        struct stat st;
        int len = snprintf(path, sizeof(path), "%s/%s", s->dir, names[i]);
        assert_true(len > 0 && (size_t)len < sizeof(path));
        assert_int_equal(stat(path, &st), 0);
        assert_true(st.st_size >= 2000);      /* rotated past the size */
        assert_true(st.st_size < 2000 + 200); /* ... at the record that passed it */
    }
    regfree(&re);
    assert_non_null(strstr(slurp(s->log), "line 4-29"));
    /* the reader goes through the rotated files then the log: consecutive lines, last one
     * the last written */
    struct ck_log_options o = {.tail_lines = -1};
    struct ck_log_reader *r = NULL;
    assert_int_equal(ck_log_reader_open(s->log, s->exit, &o, &r), 0);
    static char out[65536];
    size_t len = 0;
    ssize_t got;
    while ((got = ck_log_reader_read(r, out + len, sizeof(out) - 1 - len)) > 0)
        len += (size_t)got;
    assert_int_equal(got, CK_LOG_END);
    ck_log_reader_free(r);
    out[len] = 0;
    int last_b = 0, last_i = -1, lines = 0;
    for (char *l = out; *l; l = strchr(l, '\n') + 1) {
        int b, i;
        assert_int_equal(sscanf(l, "line %d-%d", &b, &i), 2);
        assert_true((b == last_b && i == last_i + 1) || (b == last_b + 1 && i == 0) || lines == 0);
        last_b = b;
        last_i = i;
        lines++;
    }
    assert_int_equal(last_b, 4);
    assert_int_equal(last_i, 29);
    assert_true(lines < 120); /* the oldest files were removed */
}

static void test_a_memory_limit_without_cgroups_is_an_rlimit(void **state)
{
    struct scratch *s = *state;
    /* 128 MiB in one string: fine without a limit, refused under a 32 Mi RLIMIT_DATA */
    char *argv[] = {"awk",
                    "BEGIN { s = \"x\"; while (length(s) < 80000000) s = s s; "
                    "print length(s) }",
                    NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    struct ck_proc_spec spec = {
        .argv = argv, .envp = envp, .log_path = s->log, .exit_path = s->exit};
    struct ck_proc p;
    assert_int_equal(ck_proc_start(&spec, &p, NULL), 0);
    struct ck_proc_exit e = wait_exit(s, &p);
    assert_int_equal(e.code, 0);
    assert_non_null(strstr(slurp(s->log), "stdout F 134217728"));
    struct ck_limits limits = {.memory_bytes = 32 << 20};
    spec.limits = &limits;
    assert_int_equal(ck_proc_start(&spec, &p, NULL), 0);
    e = wait_exit(s, &p);
    assert_int_not_equal(e.code, 0);
    assert_false(e.oom_killed); /* no cgroup: nothing tells an OOM kill */
}

static void test_limits_in_a_cgroup_directory(void **state)
{
    struct scratch *s = *state;
    char cg[128], path[192];
    snprintf(cg, sizeof(cg), "%s/podX_c_0", s->dir);
    assert_int_equal(mkdir(cg, 0755), 0);
    snprintf(path, sizeof(path), "%s/memory.events", cg);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n", f); /* as the kernel writes it */
    fclose(f);
    char *argv[] = {"sh", "-c", "exit 137", NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    struct ck_limits limits = {.memory_bytes = 64 << 20, .cpu_milli = 500, .pids = 10};
    struct ck_proc_spec spec = {.argv = argv,
                                .envp = envp,
                                .log_path = s->log,
                                .exit_path = s->exit,
                                .limits = &limits,
                                .cgroup_dir = cg};
    struct ck_proc p;
    assert_int_equal(ck_proc_start(&spec, &p, NULL), 0);
    struct ck_proc_exit e = wait_exit(s, &p);
    assert_int_equal(e.code, 137);
    assert_true(e.oom_killed);
    snprintf(path, sizeof(path), "%s/memory.max", cg);
    assert_string_equal(slurp(path), "67108864\n");
    snprintf(path, sizeof(path), "%s/cpu.max", cg);
    assert_string_equal(slurp(path), "50000 100000\n");
    snprintf(path, sizeof(path), "%s/pids.max", cg);
    assert_string_equal(slurp(path), "10\n");
    snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
    assert_int_equal(atoi(slurp(path)), p.pid); /* the container joined before its exec */
}

static void test_limits_from_the_container_spec(void **state)
{
    (void)state;
    json_t *c = json_loads("{\"resources\": {\"limits\": {\"memory\": \"100Mi\", \"cpu\": "
                           "\"1500m\", \"pids\": 20}}}",
                           0, NULL);
    struct ck_limits l;
    ck_limits_from_container(c, &l);
    assert_int_equal(l.memory_bytes, 100 << 20);
    assert_int_equal(l.cpu_milli, 1500);
    assert_int_equal(l.pids, 20);
    json_decref(c);
    ck_limits_from_container(NULL, &l);
    assert_int_equal(l.memory_bytes + l.cpu_milli + l.pids, 0);
}

/* The delegated-cgroup setup on a directory tree laid out as cgroupfs would be. */
static void test_cgroup_setup_on_a_copy_of_our_cgroup_path(void **state)
{
    struct scratch *s = *state;
    char self[4096] = "", dir[4600], path[4800], buf[4800];
    FILE *f = fopen("/proc/self/cgroup", "r");
    size_t n = f ? fread(self, 1, sizeof(self) - 1, f) : 0;
    if (f)
        fclose(f);
    self[n] = 0;
    const char *v2 = strncmp(self, "0::", 3) == 0 ? self + 3 : strstr(self, "\n0::");
    if (!v2) {
        printf("SKIP: this process has no cgroup v2 path in /proc/self/cgroup\n");
        skip();
    }
    if (v2 != self + 3)
        v2 += 4;
    snprintf(dir, sizeof(dir), "%s%.*s", s->dir, (int)strcspn(v2, "\n"), v2);
    for (char *p = dir + strlen(s->dir) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(dir, 0755);
            *p = '/';
        }
    mkdir(dir, 0755);
    size_t dl = strlen(dir);
    if (dir[dl - 1] == '/')
        dir[dl - 1] = 0;
    snprintf(path, sizeof(path), "%s/cgroup.controllers", dir);
    f = fopen(path, "w");
    fputs("cpuset cpu io memory hugetlb pids rdma misc\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
    fclose(fopen(path, "w"));
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    fclose(fopen(path, "w"));
    struct ck_err err = {0};
    assert_int_equal(ck_cgroup_setup(s->dir, buf, sizeof(buf), &err), 0);
    assert_string_equal(buf, dir);
    snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
    assert_string_equal(slurp(path), "+memory +cpu +pids");
    snprintf(path, sizeof(path), "%s/ckube-agent", dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    /* this machine's own cgroups are left alone: the agent logs its choice at start */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_output_in_cri_format_and_exit_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_missing_command_fails_with_the_reason, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_and_sigkill_to_the_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_log_is_rotated_by_size_and_reads_back_whole, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_memory_limit_without_cgroups_is_an_rlimit, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_limits_in_a_cgroup_directory, setup, teardown),
        cmocka_unit_test(test_limits_from_the_container_spec),
        cmocka_unit_test_setup_teardown(test_cgroup_setup_on_a_copy_of_our_cgroup_path, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
