/*
 * test_exec.c - exec sessions on the agent (lib/agent/exec.c), without HTTP: a command's
 * stdout and stderr come as records on channels 1 and 2 and its exit code in the Status
 * on channel 3 (Success, or Failure with NonZeroExitCode and the ExitCode cause); it runs
 * in the given directory and environment; stdin records reach it and a close record ends
 * its stdin; with a tty it has a pseudo-terminal that a resize record resizes; ending the
 * session kills its process group (a background child too); a missing command exits 127.
 * An attach to a host process (no command) gives only its log's new records, on stdout,
 * writes stdin into its FIFO, and ends with Success when the container ends, or a second
 * after the end of stdin once the output is quiet.
 */
#define _GNU_SOURCE /* nftw (scratch.h) */
#include "cktest.h"
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/agent/internal.h"
#include "ckube/internal/exec_stream.h"
#include "scratch.h"

struct output {
    char out[8192], err[8192];
    size_t out_len, err_len;
    json_t *status;
};

static struct ck__exec_frames frames;

/* Reads the session to its end (at most 20 s) into o. */
static void read_all(struct ck__exec_session *s, struct output *o)
{
    static char buf[70000];
    memset(o, 0, sizeof(*o));
    memset(&frames, 0, sizeof(frames));
    for (int idle = 0; idle < 20;) {
        ssize_t n = ck__exec_session_read(s, buf, sizeof(buf));
        if (n < 0)
            break;
        if (n == 0) {
            idle++;
            continue;
        }
        assert_int_equal(ck__exec_frames_append(&frames, buf, (size_t)n), (size_t)n);
        unsigned ch;
        const unsigned char *p;
        size_t len;
        while (ck__exec_frames_next(&frames, &ch, &p, &len) > 0) {
            char *dst = ch == CK_EXEC_STDOUT ? o->out : o->err;
            size_t *dlen = ch == CK_EXEC_STDOUT ? &o->out_len : &o->err_len;
            if (ch == CK_EXEC_ERROR) {
                assert_null(o->status);
                o->status = json_loadb((const char *)p, len, 0, NULL);
                assert_non_null(o->status);
                continue;
            }
            assert_true(ch == CK_EXEC_STDOUT || ch == CK_EXEC_STDERR);
            assert_true(*dlen + len < sizeof(o->out));
            memcpy(dst + *dlen, p, len);
            *dlen += len;
        }
    }
    assert_non_null(o->status);
}

static char *const env[] = {"PATH=/usr/bin:/bin", "GREETING=hi there", NULL};

static struct ck__exec_session *start(const char *id, const char *script, bool in, bool tty)
{
    char *const argv[] = {"sh", "-c", (char *)script, NULL};
    struct ck__exec_spec spec = {
        .id = id, .argv = argv, .envp = env, .dir = "/tmp", .want_stdin = in, .tty = tty};
    struct ck__exec_session *s = NULL;
    char msg[256];
    assert_int_equal(ck__exec_session_start(&spec, &s, msg, sizeof(msg)), 0);
    assert_non_null(s);
    return s;
}

static const char *cause(const json_t *status)
{
    return json_string_value(json_object_get(
        json_array_get(json_object_get(json_object_get(status, "details"), "causes"), 0),
        "message"));
}

static void test_output_stderr_and_exit_code(void **state)
{
    (void)state;
    struct ck__exec_session *s = start("a1", "echo out; echo err >&2; exit 3", false, false);
    struct output o;
    read_all(s, &o);
    ck__exec_session_end(s);
    assert_int_equal(o.out_len, 4);
    assert_memory_equal(o.out, "out\n", 4);
    assert_int_equal(o.err_len, 4);
    assert_memory_equal(o.err, "err\n", 4);
    assert_string_equal(json_string_value(json_object_get(o.status, "status")), "Failure");
    assert_string_equal(json_string_value(json_object_get(o.status, "reason")), "NonZeroExitCode");
    assert_string_equal(cause(o.status), "3");
    json_decref(o.status);
}

static void test_success_in_the_directory_and_environment(void **state)
{
    (void)state;
    struct ck__exec_session *s = start("a2", "pwd; echo \"$GREETING\"", false, false);
    struct output o;
    read_all(s, &o);
    ck__exec_session_end(s);
    o.out[o.out_len] = 0;
    assert_string_equal(o.out, "/tmp\nhi there\n");
    assert_string_equal(json_string_value(json_object_get(o.status, "status")), "Success");
    json_decref(o.status);
}

static void test_a_session_id_is_unique(void **state)
{
    (void)state;
    struct ck__exec_session *s = start("dup", "sleep 5", false, false);
    char *const argv[] = {"true", NULL};
    struct ck__exec_spec spec = {.id = "dup", .argv = argv, .envp = env};
    struct ck__exec_session *other = NULL;
    char msg[256];
    assert_int_equal(ck__exec_session_start(&spec, &other, msg, sizeof(msg)), CK_EEXIST);
    ck__exec_session_end(s);
}

static void send_record(struct ck__exec_input *in, unsigned ch, const char *data, size_t n)
{
    unsigned char buf[256];
    ck__exec_frame_header(buf, ch, n);
    memcpy(buf + CK_EXEC_FRAME_HEADER, data, n);
    assert_int_equal(ck__exec_input_take(in, buf, CK_EXEC_FRAME_HEADER + n),
                     CK_EXEC_FRAME_HEADER + n);
}

static void test_stdin_and_its_close(void **state)
{
    (void)state;
    struct ck__exec_session *s = start("a3", "cat; echo done", true, false);
    struct ck__exec_input *in = ck__exec_input_new("a3");
    assert_non_null(in);
    assert_null(ck__exec_input_new("nosuch"));
    send_record(in, CK_EXEC_STDIN, "one\n", 4);
    send_record(in, CK_EXEC_STDIN, "two\n", 4);
    send_record(in, CK_EXEC_CLOSE, "\0", 1);
    struct output o;
    read_all(s, &o);
    o.out[o.out_len] = 0;
    assert_string_equal(o.out, "one\ntwo\ndone\n");
    ck__agent_exec_input_done(in);
    ck__exec_session_end(s);
    json_decref(o.status);
}

static void test_a_tty_and_its_resize(void **state)
{
    (void)state;
    struct ck__exec_session *s = start("a4", "read x; tty; stty size", true, true);
    struct ck__exec_input *in = ck__exec_input_new("a4");
    const char size[] = "{\"Width\":123,\"Height\":45}";
    send_record(in, CK_EXEC_RESIZE, size, strlen(size));
    send_record(in, CK_EXEC_STDIN, "go\r", 3);
    struct output o;
    read_all(s, &o);
    o.out[o.out_len] = 0;
    assert_non_null(strstr(o.out, "/dev/pts/"));
    assert_non_null(strstr(o.out, "45 123"));
    assert_int_equal(o.err_len, 0); /* a terminal has one stream */
    assert_string_equal(json_string_value(json_object_get(o.status, "status")), "Success");
    ck__agent_exec_input_done(in);
    ck__exec_session_end(s);
    json_decref(o.status);
}

static void test_ending_the_session_kills_its_group(void **state)
{
    (void)state;
    char script[128];
    snprintf(script, sizeof(script), "sleep 1000 & echo $!; wait");
    struct ck__exec_session *s = start("a5", script, false, false);
    pid_t pid = ck__exec_session_pid(s);
    static char buf[70000];
    ssize_t n = 0;
    for (int i = 0; i < 20 && n <= 0; i++)
        n = ck__exec_session_read(s, buf, sizeof(buf));
    assert_true(n > CK_EXEC_FRAME_HEADER);
    buf[n] = 0;
    pid_t child = (pid_t)atoi(buf + CK_EXEC_FRAME_HEADER);
    assert_true(child > 0);
    assert_int_equal(kill(child, 0), 0);
    ck__exec_session_end(s);
    /* the shim reaped the leader; the background sleep is re-parented and dies */
    int alive = 1;
    for (int i = 0; i < 100 && alive; i++) {
        alive = kill(child, 0) == 0 || errno != ESRCH;
        char path[64], st[256] = "";
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)child);
        FILE *f = fopen(path, "re");
        if (f) {
            if (fgets(st, sizeof(st), f) && strstr(st, ") Z "))
                alive = 0; /* a zombie waiting for its new parent: dead */
            fclose(f);
        }
        if (alive)
            nanosleep(&(struct timespec){0, 50000000}, NULL);
    }
    assert_false(alive);
    assert_int_equal(kill(pid, 0) == 0 && pid > 0, 0);
}

static void test_a_missing_command_exits_127(void **state)
{
    (void)state;
    char *const argv[] = {"no-such-command-here", NULL};
    struct ck__exec_spec spec = {.id = "a6", .argv = argv, .envp = env};
    struct ck__exec_session *s = NULL;
    char msg[256];
    assert_int_equal(ck__exec_session_start(&spec, &s, msg, sizeof(msg)), 0);
    struct output o;
    read_all(s, &o);
    ck__exec_session_end(s);
    o.err[o.err_len] = 0;
    assert_non_null(strstr(o.err, "executable file not found"));
    assert_string_equal(cause(o.status), "127");
    json_decref(o.status);
}

/* ---- attach to a host process: its log and its stdin FIFO ---- */

struct attached {
    char dir[64], log[128], exit[128], fifo[128];
    int container_in; /* the container's end of the FIFO */
    struct ck__exec_session *s;
    struct ck__exec_input *in;
};

static void append_log(const char *path, const char *stream, const char *text)
{
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fprintf(f, "2026-01-02T03:04:05.000000006Z %s F %s\n", stream, text);
    fclose(f);
}

/* A container's log with a record written before the attach, and the attach. */
static void attach(struct attached *a, const char *id)
{
    assert_int_equal(scratch_make_dir(a->dir, sizeof(a->dir), "attach"), 0);
    snprintf(a->log, sizeof(a->log), "%s/0.log", a->dir);
    snprintf(a->exit, sizeof(a->exit), "%s/exit", a->dir);
    snprintf(a->fifo, sizeof(a->fifo), "%s/stdin", a->dir);
    append_log(a->log, "stdout", "before the attach");
    assert_int_equal(mkfifo(a->fifo, 0600), 0);
    a->container_in = open(a->fifo, O_RDWR | O_NONBLOCK); /* as the process runtime's */
    assert_true(a->container_in >= 0);
    struct ck_log_options o = {.follow = true, .tail_lines = 0};
    struct ck_log_reader *r = NULL;
    assert_int_equal(ck_log_reader_open(a->log, a->exit, &o, &r), 0);
    struct ck__exec_spec spec = {.id = id, .log = r, .in_fd = open(a->fifo, O_WRONLY | O_NONBLOCK)};
    char msg[256];
    assert_int_equal(ck__exec_session_start(&spec, &a->s, msg, sizeof(msg)), 0);
    a->in = ck__exec_input_new(id);
    assert_non_null(a->in);
}

static void attached_release(struct attached *a)
{
    ck__agent_exec_input_done(a->in);
    ck__exec_session_end(a->s);
    close(a->container_in);
    scratch_remove_dir(a->dir);
}

static void test_attach_follows_the_log_to_the_containers_end(void **state)
{
    (void)state;
    struct attached a;
    attach(&a, "t1");
    send_record(a.in, CK_EXEC_STDIN, "typed\n", 6);
    char got[16] = "";
    for (int i = 0; i < 100 && read(a.container_in, got, sizeof(got) - 1) <= 0; i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    assert_string_equal(got, "typed\n");
    append_log(a.log, "stdout", "out");
    append_log(a.log, "stderr", "err");
    struct ck_proc_exit e = {3, 0, 1, false};
    assert_int_equal(ck_proc_write_exit(a.exit, &e), 0);
    struct output o;
    read_all(a.s, &o);
    o.out[o.out_len] = 0;
    assert_string_equal(o.out, "out\nerr\n"); /* not what came before; stderr too */
    assert_int_equal(o.err_len, 0);
    /* the attach ended well, whatever the container's exit code */
    assert_string_equal(json_string_value(json_object_get(o.status, "status")), "Success");
    json_decref(o.status);
    attached_release(&a);
}

static void test_attach_ends_a_quiet_second_after_stdin(void **state)
{
    (void)state;
    struct attached a;
    attach(&a, "t2");
    append_log(a.log, "stdout", "answer");
    send_record(a.in, CK_EXEC_CLOSE, "\0", 1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct output o;
    read_all(a.s, &o);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    o.out[o.out_len] = 0;
    assert_string_equal(o.out, "answer\n");
    assert_string_equal(json_string_value(json_object_get(o.status, "status")), "Success");
    assert_true(t1.tv_sec - t0.tv_sec < 10); /* the container runs on: no exit file */
    json_decref(o.status);
    char buf[8];
    assert_true(read(a.container_in, buf, sizeof(buf)) < 0); /* nothing, and no end either */
    assert_int_equal(errno, EAGAIN);
    attached_release(&a);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_stderr_and_exit_code),
        cmocka_unit_test(test_success_in_the_directory_and_environment),
        cmocka_unit_test(test_a_session_id_is_unique),
        cmocka_unit_test(test_stdin_and_its_close),
        cmocka_unit_test(test_a_tty_and_its_resize),
        cmocka_unit_test(test_ending_the_session_kills_its_group),
        cmocka_unit_test(test_a_missing_command_exits_127),
        cmocka_unit_test(test_attach_follows_the_log_to_the_containers_end),
        cmocka_unit_test(test_attach_ends_a_quiet_second_after_stdin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
