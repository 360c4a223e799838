/*
 * file.c - reading a whole small file (a kubeconfig, a token file, a feature gate
 * config or list) into memory, with a cap, since such files come from users and a
 * mistaken path may name something huge; and writing one into the data directory
 * safely.
 *
 * Writing: the bytes go to a fresh temporary name next to the target, created with
 * O_CREAT | O_EXCL | O_NOFOLLOW (whatever already sits at that name, a symlink
 * planted by someone else included, makes the open fail instead of being followed)
 * and O_CLOEXEC, with its final mode from the start; they are fsync'ed, renamed over
 * the target (rename replaces a symlink at the target, never follows it) and the
 * directory is fsync'ed, so a reader sees the old file or the whole new one, also
 * after a crash.
 *
 * Removing a tree under a directory (ck__remove_tree_at): every step is relative to an
 * open directory descriptor of the tree itself, opened with O_NOFOLLOW | O_DIRECTORY,
 * and checked with fstatat(AT_SYMLINK_NOFOLLOW): a symlink inside is removed as a link,
 * never followed, so nothing outside the tree is touched, even when someone swaps a
 * directory for a symlink while the removal runs (the open of that name then fails); a
 * directory on another filesystem (a mount) is left, and so is what holds it.
 *
 * Threading: no state; temporary names carry the process id and a counter.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

int ck__read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno ? -errno : CK_EIO;
    struct ck__buf b = {.max = max};
    char chunk[8192];
    size_t got;
    int r = 0;
    while (r == 0 && (got = fread(chunk, 1, sizeof(chunk), f)) > 0)
        r = ck__buf_add(&b, chunk, got);
    if (r == 0 && ferror(f))
        r = CK_EIO;
    fclose(f);
    if (r == 0 && !b.p)
        r = ck__buf_add(&b, "", 0); /* an empty file is an empty string */
    if (r < 0) {
        ck__buf_release(&b);
        return r;
    }
    *ret = b.p;
    *ret_len = b.len;
    return 0;
}

/* fsyncs the directory holding path, so a rename in it is durable. */
static int sync_parent_dir(const char *path)
{
    char *copy = ck__strdup(path);
    if (!copy)
        return CK_ENOMEM;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(copy);
    if (fd < 0)
        return -errno;
    int r = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return r;
}

static int write_all(int fd, const char *data, size_t len)
{
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : CK_EIO;
        off += (size_t)w;
    }
    return 0;
}

int ck__write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
    static atomic_uint counter;
    size_t tmp_size = strlen(path) + 48;
    char *tmp = ck__malloc(tmp_size);
    if (!tmp)
        return CK_ENOMEM;
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 16; attempt++) {
        snprintf(tmp, tmp_size, "%s.tmp.%ld.%u", path, (long)getpid(),
                 atomic_fetch_add(&counter, 1));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        int r = -errno;
        free(tmp);
        return r;
    }
    /* the umask may have taken bits away; never adds any to a fresh 0600 file */
    int r = fchmod(fd, mode) == 0 ? 0 : -errno;
    if (r == 0)
        r = write_all(fd, data, len);
    if (r == 0 && fsync(fd) != 0)
        r = -errno;
    if (close(fd) != 0 && r == 0)
        r = -errno;
    if (r == 0 && rename(tmp, path) != 0)
        r = -errno;
    if (r < 0)
        unlink(tmp);
    else
        r = sync_parent_dir(path);
    free(tmp);
    return r;
}

int ck__check_private_dir(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
        return -EPERM;
    return 0;
}

static int remove_tree_depth(int dir_fd, const char *name, int depth);

/* Empties the directory open as fd, then closes fd: 0 or the first negated errno. */
static int empty_dir_fd(int fd, int depth)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        int r = -errno;
        close(fd);
        return r;
    }
    int r = 0;
    struct dirent *e;
    while ((errno = 0, e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        int one = remove_tree_depth(dirfd(d), e->d_name, depth);
        if (one < 0 && one != -ENOENT && r == 0)
            r = one;
    }
    if (errno && r == 0)
        r = -errno;
    closedir(d); /* closes fd */
    return r;
}

static int remove_tree_depth(int dir_fd, const char *name, int depth)
{
    struct stat st, parent, opened;
    if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return -EINVAL;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(dir_fd, name, 0) < 0 ? -errno : 0;
    if (fstat(dir_fd, &parent) < 0)
        return -errno;
    if (st.st_dev != parent.st_dev)
        return -EXDEV; /* a mount: left, with what holds it */
    if (depth >= 256)
        return -ELOOP;
    int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &opened) < 0 || opened.st_dev != st.st_dev || opened.st_ino != st.st_ino) {
        close(fd);
        return -EAGAIN; /* replaced between the look and the open */
    }
    int r = empty_dir_fd(fd, depth + 1);
    if (r < 0)
        return r;
    return unlinkat(dir_fd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

int ck__remove_tree_at(int dir_fd, const char *name)
{
    return remove_tree_depth(dir_fd, name, 0);
}
