/*
 * emptydir.c - emptyDir volumes of `medium: Memory`, as the kubelet's emptyDir plugin
 * sets them up (pkg/volume/emptydir/empty_dir.go, setupTmpfs and TearDownAt): a tmpfs
 * mounted at the volume's directory, <pod dir>/volumes/<name>, before the containers
 * start (they bind-mount that directory), and unmounted before the pod's directory is
 * removed (the removal does not cross mount points).
 *
 * The size is the kubelet's with SizeMemoryBackedVolumes (GA in 1.32): the node's
 * allocatable memory (the host's memory, as the agent registers it), lowered to the
 * pod's memory limit when the pod has one (ResourceConfigForPod: Guaranteed, or
 * Burstable with every container limiting memory), lowered to the volume's sizeLimit
 * when that is smaller. With swap on, `noswap` is asked for when the kernel knows it
 * (the kubelet's check), so the volume's pages stay in memory.
 *
 * Mounting needs CAP_SYS_ADMIN: an agent that is not root gets mount(2)'s error, which
 * the pod's FailedMount event carries.
 *
 * Threading: none; the supervisor calls it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "ckube/api.h"
#include "internal.h"

#define TMPFS_MAGIC 0x01021994

/* Whether dir is the root of a tmpfs mount (kubelet's GetMountMedium: memory, a mount). */
static bool is_tmpfs_mount(const char *dir)
{
    struct statfs fs;
    struct stat st, parent;
    char up[PATH_MAX];
    if (statfs(dir, &fs) < 0 || fs.f_type != TMPFS_MAGIC || lstat(dir, &st) < 0 ||
        snprintf(up, sizeof(up), "%s/..", dir) >= (int)sizeof(up) || stat(up, &parent) < 0)
        return false;
    return st.st_dev != parent.st_dev;
}

/* The host's memory in bytes, in Ki as the node registers it. */
static int64_t host_memory(void)
{
    return (int64_t)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) / 1024 * 1024;
}

int64_t ck__emptydir_memory_size(const json_t *pod, const json_t *vol, int64_t node_memory)
{
    int64_t size = node_memory > 0 ? node_memory : host_memory();
    struct ck__pod_resources res;
    ck__pod_resource_config(pod, &res);
    if (res.has_memory && res.memory > 0 && res.memory <= size)
        size = res.memory;
    const char *limit =
        json_string_value(json_object_get(json_object_get(vol, "emptyDir"), "sizeLimit"));
    int64_t milli = 0;
    if (limit && ck_quantity_milli(limit, &milli) == 0 && milli > 0 && (milli + 999) / 1000 <= size)
        size = (milli + 999) / 1000;
    return size;
}

/* Whether swap is on (a line after /proc/swaps' header), as the kubelet's IsSwapOn. */
static bool swap_on(void)
{
    FILE *f = fopen("/proc/swaps", "re");
    char line[512];
    int n = 0;
    while (f && fgets(line, sizeof(line), f))
        n++;
    if (f)
        fclose(f);
    return n > 1;
}

int ck__emptydir_setup(const json_t *pod, const json_t *vol, const char *dir, int64_t node_memory,
                       struct ck_err *reterr)
{
    const char *medium =
        json_string_value(json_object_get(json_object_get(vol, "emptyDir"), "medium"));
    if (!medium || strcmp(medium, "Memory") != 0)
        return 0;
    if (ck__mkdirs(dir) < 0)
        return ck_err_set(reterr, -errno, "mkdir %s: %s", dir, strerror(errno));
    if (is_tmpfs_mount(dir)) /* set up already */
        return 0;
    char options[64];
    snprintf(options, sizeof(options), "size=%lld",
             (long long)ck__emptydir_memory_size(pod, vol, node_memory));
    if (swap_on()) { /* noswap (Linux 6.4); an older kernel refuses it: then without */
        char noswap[80];
        snprintf(noswap, sizeof(noswap), "%s,noswap", options);
        if (mount("tmpfs", dir, "tmpfs", 0, noswap) == 0)
            return 0;
    }
    if (mount("tmpfs", dir, "tmpfs", 0, options) == 0)
        return 0;
    int e = errno;
    return ck_err_set(
        reterr, -e, "mount failed: %s%s\nMounting arguments: -t tmpfs -o %s tmpfs %s", strerror(e),
        e == EPERM ? " (a memory-backed emptyDir needs the agent to run as root)" : "", options,
        dir);
}

int ck__emptydir_unmount_all(const char *pod_dir)
{
    char vdir[PATH_MAX], path[PATH_MAX];
    int n = 0;
    if (snprintf(vdir, sizeof(vdir), "%s/volumes", pod_dir) >= (int)sizeof(vdir))
        return 0;
    DIR *d = opendir(vdir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.' ||
            snprintf(path, sizeof(path), "%s/%s", vdir, e->d_name) >= (int)sizeof(path) ||
            !is_tmpfs_mount(path))
            continue;
        /* a mount still in use (a container's bind mount of it has its own): detached */
        if (umount2(path, 0) == 0 || umount2(path, MNT_DETACH) == 0)
            n++;
        else
            CK_LOGS_ERR("Failed to unmount a memory-backed emptyDir", "path", path, "err",
                        strerror(errno));
    }
    if (d)
        closedir(d);
    return n;
}
