/*
 * logrotate.c - the rotation of a CRI runtime's container logs, as the kubelet's
 * container log manager does it (pkg/kubelet/logs/container_log_manager.go): every
 * containerLogMonitorInterval the runtime lists its running containers
 * (runtime_cri.c's rotate_logs) and hands each log here.
 *
 * One container's log LOG (ck__log_rotate):
 * - LOG missing: the runtime is asked to reopen it (ReopenContainerLog), then it is
 *   looked at again;
 * - smaller than containerLogMaxSize: nothing;
 * - else, among the files LOG.*: those a failed rotation left are removed (LOG.*.tmp, and
 *   an uncompressed file whose LOG.<time>.gz exists); the oldest are removed until
 *   MaxFiles - 2 are left (the current log and the one about to be rotated make
 *   MaxFiles); those left that are not compressed are gzipped (LOG.<time>.tmp, renamed
 *   LOG.<time>.gz, then LOG.<time> removed); LOG is renamed LOG.<YYYYmmdd-HHMMSS> and
 *   the runtime reopens LOG; when the reopen fails the rename is undone, so the next pass
 *   tries again. The newest rotated file stays uncompressed: the container may still
 *   write to it until the runtime has reopened, and a reader may still be at its end.
 *
 * The time in the name is UTC (the kubelet's is its local time; on a node in UTC the
 * same). Two rotations of one log within a second would give one name: the monitor
 * interval is at least 3 s (the kubelet's validation), and a name already taken skips the
 * pass rather than overwrite it.
 *
 * Threading: none of its own; the agent's log rotation thread calls it.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "internal.h"

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool ck__log_file_in_use(const char *name, char *const *names, size_t n)
{
    if (has_suffix(name, ".tmp"))
        return false;
    if (has_suffix(name, ".gz"))
        return true;
    size_t len = strlen(name);
    for (size_t i = 0; i < n; i++) /* compressed already: the .gz is the one in use */
        if (strncmp(names[i], name, len) == 0 && strcmp(names[i] + len, ".gz") == 0)
            return false;
    return true;
}

/* gzips path into path.gz (through path.gz's .tmp) and removes path. 0 or a negated errno. */
static int compress_log(const char *path, struct ck_err *reterr)
{
    char *tmp = NULL, *gz = NULL;
    struct stat st;
    int r = 0;
    if (asprintf(&tmp, "%s.tmp", path) < 0 || asprintf(&gz, "%s.gz", path) < 0) {
        free(tmp);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    int in = open(path, O_RDONLY | O_CLOEXEC);
    if (in < 0 || fstat(in, &st) < 0) {
        r = ck_err_set(reterr, -errno, "failed to open log %s: %s", path, strerror(errno));
        goto out;
    }
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 07777);
    gzFile g = out >= 0 ? gzdopen(out, "wb") : NULL;
    if (!g) {
        r = ck_err_set(reterr, CK_EIO, "failed to create temporary log %s: %s", tmp,
                       strerror(errno));
        if (out >= 0)
            close(out);
        goto out_unlink;
    }
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0)
        if (gzwrite(g, buf, (unsigned)n) != (int)n) {
            n = -1;
            break;
        }
    if (gzclose(g) != Z_OK || n < 0) { /* gzclose closes out */
        r = ck_err_set(reterr, CK_EIO, "failed to compress %s to %s", path, tmp);
        goto out_unlink;
    }
    if (rename(tmp, gz) < 0) {
        r = ck_err_set(reterr, -errno, "failed to rename %s to %s: %s", tmp, gz, strerror(errno));
        goto out_unlink;
    }
    if (unlink(path) < 0)
        r = ck_err_set(reterr, -errno, "failed to remove log %s after compress: %s", path,
                       strerror(errno));
    goto out;
out_unlink:
    unlink(tmp);
out:
    if (in >= 0)
        close(in);
    free(tmp);
    free(gz);
    return r;
}

/* kubelet's rotateLog: the files LOG.* tidied and compressed, then LOG itself rotated. */
static int rotate(const char *path, int max_files, int64_t now_s, ck__log_reopen_fn reopen,
                  void *arg, struct ck_err *reterr)
{
    char stamp[32], rotated[4096], gz[4100];
    struct tm tm;
    time_t t = (time_t)now_s;
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", gmtime_r(&t, &tm));
    if (snprintf(rotated, sizeof(rotated), "%s.%s", path, stamp) >= (int)sizeof(rotated))
        return ck_err_set(reterr, CK_EINVAL, "log path too long: %s", path);
    snprintf(gz, sizeof(gz), "%s.gz", rotated);
    if (access(rotated, F_OK) == 0 || access(gz, F_OK) == 0)
        return 0; /* rotated already within this second: the next pass */
    size_t n = 0, i;
    char **files = ck__log_rotated_files(path, true, &n);
    char **inuse = calloc(n + 1, sizeof(*inuse));
    size_t n_inuse = 0;
    int r = 0;
    if (!inuse) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out;
    }
    for (i = 0; i < n; i++) { /* what an interrupted rotation or compression left */
        if (ck__log_file_in_use(files[i], files, n))
            inuse[n_inuse++] = files[i];
        else if (unlink(files[i]) < 0 && errno != ENOENT) {
            r = ck_err_set(reterr, -errno, "failed to remove unused log %s: %s", files[i],
                           strerror(errno));
            goto out;
        }
    }
    /* the oldest first (the names sort by time), so a reader of the newer ones goes on */
    size_t keep = max_files > 2 ? (size_t)max_files - 2 : 0;
    for (i = 0; i + keep < n_inuse; i++)
        if (unlink(inuse[i]) < 0 && errno != ENOENT) {
            r = ck_err_set(reterr, -errno, "failed to remove old log %s: %s", inuse[i],
                           strerror(errno));
            goto out;
        }
    for (; i < n_inuse; i++)
        if (!has_suffix(inuse[i], ".gz") && (r = compress_log(inuse[i], reterr)) < 0)
            goto out;
    if (rename(path, rotated) < 0) {
        r = ck_err_set(reterr, -errno, "failed to rotate log %s to %s: %s", path, rotated,
                       strerror(errno));
        goto out;
    }
    struct ck_err rerr = {0};
    if ((r = reopen(arg, &rerr)) < 0) {
        /* back, so that the next pass tries again (lines written meanwhile are in it) */
        if (rename(rotated, path) < 0)
            CK_LOGS_ERR("Failed to rename rotated log", "rotatedLog", rotated, "newLog", path,
                        "err", strerror(errno));
        r = ck_err_set(reterr, r, "failed to reopen container log: %s", ck_err_message(&rerr));
        ck_err_release(&rerr);
        goto out;
    }
    r = 1;
out:
    for (i = 0; i < n; i++)
        free(files[i]);
    free(files);
    free(inuse);
    return r;
}

int ck__log_rotate(const char *path, int64_t max_size, int max_files, int64_t now_s,
                   ck__log_reopen_fn reopen, void *arg, struct ck_err *reterr)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        if (errno != ENOENT)
            return ck_err_set(reterr, -errno, "failed to stat container log %s: %s", path,
                              strerror(errno));
        struct ck_err rerr = {0};
        int r = reopen(arg, &rerr);
        if (r < 0) {
            r = ck_err_set(reterr, r,
                           "container log %s doesn't exist, reopen container log failed: %s", path,
                           ck_err_message(&rerr));
            ck_err_release(&rerr);
            return r;
        }
        if (stat(path, &st) < 0)
            return ck_err_set(reterr, -errno, "failed to stat container log %s after reopen: %s",
                              path, strerror(errno));
    }
    if (max_size < 0 || st.st_size < max_size)
        return 0;
    return rotate(path, max_files, now_s, reopen, arg, reterr);
}

FILE *ck__log_open_rotated(const char *path)
{
    if (!has_suffix(path, ".gz"))
        return fopen(path, "re");
    gzFile g = gzopen(path, "rb");
    FILE *f = g ? tmpfile() : NULL; /* the reader seeks (a tail), which gzip cannot do well */
    char buf[65536];
    int n = 0;
    while (f && (n = gzread(g, buf, sizeof(buf))) > 0)
        if (fwrite(buf, 1, (size_t)n, f) != (size_t)n)
            n = -1;
    if (g)
        gzclose(g);
    if (f && (n < 0 || fflush(f) != 0)) {
        fclose(f);
        return NULL;
    }
    if (f)
        rewind(f);
    return f;
}
