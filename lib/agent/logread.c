/*
 * logread.c - reading a container's CRI log as the kubelet's ReadLogs does, for the log
 * server (logserver.c): the rotated files (LOG.<YYYYmmdd-HHMMSS>, oldest first; those the
 * CRI runtime's rotation gzipped, LOG.<time>.gz, decompressed) then LOG,
 * each record's text (with its RFC 3339 time in front when timestamps are asked, once per
 * line: the parts of a partial line carry none), and the options combined as the kubelet
 * combines them:
 *
 * - tailLines N: start at the N-th last record (across the files); without follow, stop
 *   after those N records;
 * - since (sinceSeconds turned into a time, or sinceTime, the later of the two): records
 *   older are skipped (after the tail was taken, so they count towards N);
 * - limitBytes: the output ends after that many bytes, even mid-record;
 * - follow: at the end, wait for more while the container runs (no exit file yet); when
 *   LOG was rotated meanwhile, finish the old file, then go on with the new LOG.
 *
 * Also a container's termination message (its termination file, else the tail of its log
 * under FallbackToLogsOnError), as the kubelet's getTerminationMessage reads it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckube/agent.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define RECORD_MAX 20000 /* a record: 16 KiB of text at most, plus its head */

struct ck_log_reader {
    struct ck_log_options opts;
    char path[4096], exit_path[4096];
    FILE **files; /* the rotated files then LOG, opened at the start */
    size_t n, cur;
    int64_t remaining;  /* records left in limited mode (tail without follow); <0: all */
    int64_t limit;      /* bytes left; <0: no limit */
    bool line_start;    /* the last record sent ended its line */
    bool rotation_seen; /* LOG is another file than ours: one more read, then switch */
    char line[RECORD_MAX];
    char out[RECORD_MAX + 64];
    size_t out_len, out_at;
};

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **ck__log_rotated_files(const char *path, bool with_tmp, size_t *ret_n)
{
    *ret_n = 0;
    const char *slash = strrchr(path, '/');
    if (!slash)
        return NULL;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    const char *base = slash + 1;
    size_t blen = strlen(base), n = 0, cap = 0;
    char **v = NULL;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, base, blen) != 0 || e->d_name[blen] != '.' ||
            (!with_tmp && strstr(e->d_name + blen, ".tmp")))
            continue;
        if (n == cap) {
            char **nv = realloc(v, (cap = cap ? cap * 2 : 8) * sizeof(*nv));
            if (!nv)
                break;
            v = nv;
        }
        if (asprintf(&v[n], "%s/%s", dir, e->d_name) >= 0)
            n++;
    }
    if (d)
        closedir(d);
    if (n)
        qsort(v, n, sizeof(*v), cmp_names);
    *ret_n = n;
    return v;
}

/* Counts the records (newlines) of f backwards from its end: where the `want`-th last one
 * starts, or -1 (and how many there were in *ret_seen) when f has fewer. */
static long find_tail(FILE *f, int64_t want, int64_t *ret_seen)
{
    char block[8192];
    fseek(f, 0, SEEK_END);
    long end = ftell(f), at = end;
    int64_t seen = 0;
    while (at > 0) {
        long from = at > (long)sizeof(block) ? at - (long)sizeof(block) : 0;
        size_t n = (size_t)(at - from);
        fseek(f, from, SEEK_SET);
        if (fread(block, 1, n, f) != n)
            break;
        for (size_t i = n; i-- > 0;) {
            long pos = from + (long)i;
            if (block[i] != '\n' || pos == end - 1)
                continue;
            if (++seen == want) {
                *ret_seen = seen;
                return pos + 1;
            }
        }
        at = from;
    }
    if (end > 0) /* the first record has no newline before it */
        seen++;
    *ret_seen = seen;
    return seen == want ? 0 : -1;
}

int64_t ck_log_since(const char *since_seconds, const char *since_time, int64_t now_ns)
{
    int64_t since = 0, sec = 0;
    char *end;
    if (since_seconds && *since_seconds) {
        long long s = strtoll(since_seconds, &end, 10);
        if (!*end && s > 0)
            since = s < now_ns / CK_SEC ? now_ns - (int64_t)s * CK_SEC : 0;
    }
    long usec = 0;
    if (since_time && *since_time && ck__time_parse(since_time, &sec, &usec) == 0) {
        if (sec > INT64_MAX / CK_SEC - 1) /* beyond any record: all are older */
            return INT64_MAX;
        if (sec * CK_SEC + usec * 1000 > since)
            since = sec * CK_SEC + usec * 1000;
    }
    return since;
}

int ck_log_reader_open(const char *path, const char *exit_path, const struct ck_log_options *opts,
                       struct ck_log_reader **ret)
{
    struct ck_log_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return CK_ENOMEM;
    r->opts = *opts;
    snprintf(r->path, sizeof(r->path), "%s", path);
    snprintf(r->exit_path, sizeof(r->exit_path), "%s", exit_path ? exit_path : "");
    size_t nrot = 0;
    char **rot = ck__log_rotated_files(path, false, &nrot);
    r->files = calloc(nrot + 1, sizeof(*r->files));
    for (size_t i = 0; r->files && i < nrot; i++) {
        if (!ck__log_file_in_use(rot[i], rot, nrot)) /* its .gz has the same lines */
            continue;
        FILE *f = ck__log_open_rotated(rot[i]); /* removed meanwhile: skipped */
        if (f)
            r->files[r->n++] = f;
    }
    for (size_t i = 0; i < nrot; i++)
        free(rot[i]);
    free(rot);
    FILE *last = r->files ? fopen(path, "re") : NULL;
    if (!last) {
        ck_log_reader_free(r);
        return CK_ENOENT;
    }
    r->files[r->n++] = last;
    r->limit = opts->limit_bytes > 0 ? opts->limit_bytes : -1;
    r->remaining = opts->tail_lines >= 0 && !opts->follow ? opts->tail_lines : -1;
    r->line_start = true;
    if (opts->tail_lines >= 0) {
        int64_t want = opts->tail_lines;
        r->cur = r->n - 1;
        fseek(last, 0, SEEK_END);
        for (size_t i = r->n; want > 0 && i-- > 0;) {
            int64_t seen = 0;
            long at = find_tail(r->files[i], want, &seen);
            r->cur = i;
            if (at >= 0) {
                fseek(r->files[i], at, SEEK_SET);
                break;
            }
            fseek(r->files[i], 0, SEEK_SET);
            want -= seen;
        }
    }
    *ret = r;
    return 0;
}

void ck_log_reader_free(struct ck_log_reader *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        fclose(r->files[i]);
    free(r->files);
    free(r);
}

/* The text of one CRI record into r->out, or nothing when skipped; false: not a record. */
static bool take_record(struct ck_log_reader *r)
{
    const char *rec = r->line;
    const char *sp1 = strchr(rec, ' ');
    const char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    const char *sp3 = sp2 ? strchr(sp2 + 1, ' ') : NULL;
    if (!sp3)
        return false;
    bool partial = sp2[1] == 'P';
    if (r->opts.since_ns > 0) {
        char ts[64];
        int64_t sec = 0;
        long usec = 0;
        snprintf(ts, sizeof(ts), "%.*s", (int)(sp1 - rec), rec);
        int64_t since_sec = r->opts.since_ns / CK_SEC, since_ns = r->opts.since_ns % CK_SEC;
        if (ck__time_parse(ts, &sec, &usec) == 0 &&
            (sec < since_sec || (sec == since_sec && usec * 1000 < since_ns)))
            return true; /* older than since: skipped */
    }
    const char *text = sp3 + 1;
    size_t len = strcspn(text, "\n"), n = 0;
    if (r->opts.timestamps && r->line_start)
        n = (size_t)snprintf(r->out, sizeof(r->out), "%.*s ", (int)(sp1 - rec), rec);
    if (n + len + 1 > sizeof(r->out))
        len = sizeof(r->out) - n - 1;
    memcpy(r->out + n, text, len);
    n += len;
    if (!partial)
        r->out[n++] = '\n';
    r->line_start = !partial;
    r->out_len = n;
    r->out_at = 0;
    return true;
}

/* Whether LOG is now another file than the one read last (it was rotated). */
static bool rotated_away(struct ck_log_reader *r)
{
    struct stat now, ours;
    FILE *f = r->files[r->n - 1];
    return stat(r->path, &now) == 0 && fstat(fileno(f), &ours) == 0 &&
           (now.st_ino != ours.st_ino || now.st_dev != ours.st_dev);
}

ssize_t ck_log_reader_read(struct ck_log_reader *r, char *buf, size_t max)
{
    for (;;) {
        if (r->limit == 0)
            return CK_LOG_END;
        if (r->out_at < r->out_len) {
            size_t n = r->out_len - r->out_at;
            if (n > max)
                n = max;
            if (r->limit > 0 && (int64_t)n > r->limit)
                n = (size_t)r->limit;
            memcpy(buf, r->out + r->out_at, n);
            r->out_at += n;
            if (r->limit > 0)
                r->limit -= (int64_t)n;
            return (ssize_t)n;
        }
        if (r->remaining == 0)
            return CK_LOG_END;
        FILE *f = r->files[r->cur];
        long at = ftell(f);
        if (fgets(r->line, sizeof(r->line), f) && strchr(r->line, '\n')) {
            r->rotation_seen = false;
            if (r->remaining > 0)
                r->remaining--;
            take_record(r);
            continue;
        }
        fseek(f, at, SEEK_SET); /* half a record, or none yet */
        clearerr(f);
        if (r->cur + 1 < r->n) { /* the end of a rotated file: on to the next */
            r->cur++;
            continue;
        }
        if (!r->opts.follow)
            return CK_LOG_END;
        if (rotated_away(r)) {
            if (!r->rotation_seen) { /* what was written before the rename: read it first */
                r->rotation_seen = true;
                continue;
            }
            FILE *nf = fopen(r->path, "re");
            if (nf) {
                fclose(f);
                r->files[r->cur] = nf;
                r->rotation_seen = false;
                continue;
            }
        } else if (access(r->exit_path, F_OK) == 0) {
            /* ended: one more read for what came just before the exit file */
            if (fgets(r->line, sizeof(r->line), f) && strchr(r->line, '\n')) {
                take_record(r);
                continue;
            }
            return CK_LOG_END;
        }
        return 0; /* nothing yet: the caller waits and comes back */
    }
}

int ck__termination_file(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) >= sizeof(dir))
        return -EINVAL;
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
    if (ck__mkdirs(dir) < 0)
        return -errno;
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0)
        return -errno;
    int r = fchmod(fd, 0666) < 0 ? -errno : 0; /* whatever the umask: any user writes it */
    close(fd);
    return r;
}

char *ck__termination_message(const char *file, const char *log_path, const char *policy, int code)
{
    int fd = file ? open(file, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) { /* its first CK__TERMINATION_MAX bytes, as the kubelet's LimitReader */
        char *msg = malloc(CK__TERMINATION_MAX + 1);
        size_t len = 0;
        ssize_t n;
        while (msg && len < CK__TERMINATION_MAX &&
               (n = read(fd, msg + len, CK__TERMINATION_MAX - len)) > 0)
            len += (size_t)n;
        close(fd);
        if (msg && len > 0) {
            msg[len] = '\0';
            return msg;
        }
        free(msg);
    }
    if (!log_path || !policy || strcmp(policy, "FallbackToLogsOnError") != 0 || code == 0)
        return NULL;
    struct ck_log_options opts = {.tail_lines = CK__TERMINATION_LOG_LINES};
    struct ck_log_reader *r = NULL;
    if (ck_log_reader_open(log_path, "", &opts, &r) < 0)
        return NULL;
    struct ck__buf out = {0};
    char buf[4096];
    ssize_t n;
    while ((n = ck_log_reader_read(r, buf, sizeof(buf))) > 0)
        ck__buf_add(&out, buf, (size_t)n);
    ck_log_reader_free(r);
    if (out.err || !out.p || out.len == 0) {
        ck__buf_release(&out);
        return NULL;
    }
    size_t from = out.len > CK__TERMINATION_LOG_MAX ? out.len - CK__TERMINATION_LOG_MAX : 0;
    char *tail = strndup(out.p + from, out.len - from);
    ck__buf_release(&out);
    return tail;
}
