/*
 * podcgroup.c - a pod's cgroup with the pod's resources, as the kubelet's pod container
 * manager makes it (pkg/kubelet/cm/pod_container_manager_linux.go, EnsureExists, over
 * cgroup_manager_linux.go and its libcontainer cgroupfs managers): before the pod's
 * sandbox, the cgroup <cgroup root>/kubepods[/burstable|/besteffort]/pod<uid> is made,
 * when it does not exist yet, with what ResourceConfigForPod gives (podresources.c). The
 * runtime then makes the sandbox's and containers' cgroups below it (their cgroup
 * parent), so the pod as a whole never gets more than its summed limits.
 *
 * - cgroup v1 (a hierarchy per controller, found in the mount table as the kubelet does:
 *   the shortest mount point of each): cpu.shares, cpu.cfs_period_us and cpu.cfs_quota_us
 *   in the cpu hierarchy, memory.limit_in_bytes in the memory one; the directory is made
 *   in each of the two.
 * - cgroup v2 (one unified hierarchy): each parent from the cgroup root down gets
 *   "+cpu +memory" in cgroup.subtree_control (as runc does for its cgroups), then
 *   cpu.weight (the kubelet's conversion of the shares: 1 + (shares - 2) * 9999 /
 *   262142), cpu.max ("quota period"), memory.max.
 *
 * Like the kubelet, an existing pod cgroup is left as it is (EnsureExists creates only).
 * The QoS cgroups above it (kubepods, burstable, besteffort) are made without settings
 * of their own, where the kubelet's QoS container manager gives them shares and memory
 * limits of their own.
 *
 * Threading: none; the supervisor calls it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* Whether the comma-separated option list opts holds word. */
static bool has_option(const char *opts, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = opts; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, word, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

int ck__cgroup_mounts_read(const char *mounts, struct ck__cgroup_mounts *ret)
{
    memset(ret, 0, sizeof(*ret));
    FILE *f = fopen(mounts ? mounts : "/proc/self/mounts", "re");
    if (!f)
        return -errno;
    char line[4096], dev[256], dir[PATH_MAX], type[64], opts[1024];
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%255s %4095s %63s %1023s", dev, dir, type, opts) != 4)
            continue;
        if (strcmp(type, "cgroup2") == 0 && strcmp(dir, "/sys/fs/cgroup") == 0 && !mounts)
            ret->v2 = true; /* the unified mode: cgroup2 at the usual place */
        if (strcmp(type, "cgroup2") == 0 && (mounts || strcmp(dir, "/sys/fs/cgroup") == 0))
            snprintf(ret->unified, sizeof(ret->unified), "%s", dir);
        if (strcmp(type, "cgroup") != 0)
            continue;
        /* the shortest mount point of each controller, as the kubelet picks them */
        if (has_option(opts, "cpu") && (!ret->cpu[0] || strlen(dir) < strlen(ret->cpu)))
            snprintf(ret->cpu, sizeof(ret->cpu), "%s", dir);
        if (has_option(opts, "memory") && (!ret->memory[0] || strlen(dir) < strlen(ret->memory)))
            snprintf(ret->memory, sizeof(ret->memory), "%s", dir);
    }
    fclose(f);
    if (mounts) /* a test's table: v2 when it has no v1 controllers */
        ret->v2 = !ret->cpu[0] && !ret->memory[0] && ret->unified[0];
    return 0;
}

/* Writes text to dir/file. 0, or the failure with reterr. */
static int write_value(const char *dir, const char *file, const char *text, struct ck_err *reterr)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
        return ck_err_set(reterr, CK_EINVAL, "cgroup path too long: %s", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_t len = strlen(text);
    if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return ck_err_set(reterr, -e, "failed to write %s to %s: %s", text, path, strerror(e));
    }
    close(fd);
    return 0;
}

/* mkdir -p of hierarchy + cgroup; *ret_made: the pod's directory was new. */
static int make_dirs(const char *hierarchy, const char *cgroup, char *path, size_t size,
                     bool *ret_made, bool v2, struct ck_err *reterr)
{
    if (snprintf(path, size, "%s%s", hierarchy, cgroup) >= (int)size)
        return ck_err_set(reterr, CK_EINVAL, "cgroup path too long: %s", cgroup);
    *ret_made = false;
    for (char *p = path + strlen(hierarchy) + 1;; p++) {
        if (*p != '/' && *p)
            continue;
        char c = *p;
        *p = 0;
        bool made = mkdir(path, 0755) == 0;
        if (!made && errno != EEXIST) {
            int e = errno;
            *p = c;
            return ck_err_set(reterr, -e, "failed to create cgroup %s: %s", path, strerror(e));
        }
        if (!c)
            *ret_made = made;
        else if (v2 && write_value(path, "cgroup.subtree_control", "+cpu +memory", reterr) < 0) {
            /* a parent: its children get the controllers */
            *p = c;
            return reterr ? reterr->code : CK_EIO;
        }
        *p = c;
        if (!c)
            return 0;
    }
}

int ck__pod_cgroup_ensure(const struct ck__cgroup_mounts *m, const char *cgroup,
                          const struct ck__pod_resources *res, struct ck_err *reterr)
{
    char dir[PATH_MAX], text[64];
    bool made = false;
    int r;
    if (m->v2) {
        /* the root's subtree_control too: cgroup's first component's parent is the root */
        if ((r = write_value(m->unified, "cgroup.subtree_control", "+cpu +memory", reterr)) < 0 ||
            (r = make_dirs(m->unified, cgroup, dir, sizeof(dir), &made, true, reterr)) < 0)
            return r;
        if (!made)
            return 0; /* exists: left as it is, as the kubelet's EnsureExists */
        snprintf(text, sizeof(text), "%llu",
                 (unsigned long long)(1 + (res->cpu_shares - 2) * 9999 / 262142));
        if ((r = write_value(dir, "cpu.weight", text, reterr)) < 0)
            return r;
        if (res->has_cpu_quota && res->cpu_quota > 0) {
            snprintf(text, sizeof(text), "%lld %llu", (long long)res->cpu_quota,
                     (unsigned long long)res->cpu_period);
            if ((r = write_value(dir, "cpu.max", text, reterr)) < 0)
                return r;
        }
        if (res->has_memory && res->memory > 0) {
            snprintf(text, sizeof(text), "%lld", (long long)res->memory);
            if ((r = write_value(dir, "memory.max", text, reterr)) < 0)
                return r;
        }
        return 0;
    }
    if (!m->cpu[0] || !m->memory[0])
        return ck_err_set(reterr, CK_ENOENT, "no cgroup v1 hierarchy of the %s controller",
                          m->cpu[0] ? "memory" : "cpu");
    bool made_memory = false;
    char mdir[PATH_MAX];
    if ((r = make_dirs(m->cpu, cgroup, dir, sizeof(dir), &made, false, reterr)) < 0 ||
        (r = make_dirs(m->memory, cgroup, mdir, sizeof(mdir), &made_memory, false, reterr)) < 0)
        return r;
    if (made) {
        snprintf(text, sizeof(text), "%llu", (unsigned long long)res->cpu_shares);
        if ((r = write_value(dir, "cpu.shares", text, reterr)) < 0)
            return r;
        if (res->has_cpu_quota && res->cpu_quota > 0) {
            snprintf(text, sizeof(text), "%llu", (unsigned long long)res->cpu_period);
            if ((r = write_value(dir, "cpu.cfs_period_us", text, reterr)) < 0)
                return r;
            snprintf(text, sizeof(text), "%lld", (long long)res->cpu_quota);
            if ((r = write_value(dir, "cpu.cfs_quota_us", text, reterr)) < 0)
                return r;
        }
    }
    if (made_memory && res->has_memory && res->memory > 0) {
        snprintf(text, sizeof(text), "%lld", (long long)res->memory);
        if ((r = write_value(mdir, "memory.limit_in_bytes", text, reterr)) < 0)
            return r;
    }
    return 0;
}
