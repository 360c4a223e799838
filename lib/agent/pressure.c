/*
 * pressure.c - the node's MemoryPressure, DiskPressure and PIDPressure, measured on the
 * host against the kubelet's evictionHard thresholds:
 *
 *   memory.available   MemAvailable of /proc/meminfo (the kubelet: capacity minus the
 *                      root cgroup's working set; close, not equal)
 *   nodefs.available   statvfs of the root dir: free blocks for unprivileged users
 *   nodefs.inodesFree  statvfs of the root dir: free inodes
 *   pid.available      min(pid_max, threads-max) minus sysinfo()'s process count
 *
 * A threshold is a quantity ("100Mi") or a percentage of the capacity ("10%"). The
 * kubelet's 1.32 Linux defaults apply when the configuration gives no evictionHard:
 * memory.available<100Mi, nodefs.available<10%, nodefs.inodesFree<5% (imagefs.available
 * has no meaning without images). A given map replaces the defaults, as in 1.32.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>

#include "ckube/agent.h"
#include "ckube/api.h"
#include "ckube/internal/util.h"

static int parse_threshold(const char *signal, const char *v, struct ck_threshold *t,
                           struct ck_err *reterr)
{
    size_t len = v ? strlen(v) : 0;
    if (len > 1 && v[len - 1] == '%') {
        char *end;
        double pct = strtod(v, &end);
        if (end != v + len - 1 || pct < 0 || pct > 100)
            return ck_err_set(reterr, CK_EINVAL, "evictionHard %s: invalid percentage %s", signal,
                              v);
        t->percent = pct;
        t->set = true;
        return 0;
    }
    int64_t milli = 0;
    if (!v || ck_quantity_milli(v, &milli) < 0 || milli < 0)
        return ck_err_set(reterr, CK_EINVAL, "evictionHard %s: invalid quantity %s", signal,
                          v ? v : "(not a string)");
    t->quantity = (milli + 999) / 1000;
    t->percent = -1;
    t->set = true;
    return 0;
}

int ck_pressure_thresholds_parse(const json_t *eviction_hard, struct ck_pressure_thresholds *ret,
                                 struct ck_err *reterr)
{
    memset(ret, 0, sizeof(*ret));
    json_t *defaults = NULL;
    if (!eviction_hard)
        eviction_hard = defaults = json_pack("{s:s, s:s, s:s}", "memory.available", "100Mi",
                                             "nodefs.available", "10%", "nodefs.inodesFree", "5%");
    const char *k;
    json_t *v;
    int r = 0;
    json_object_foreach((json_t *)eviction_hard, k, v)
    {
        struct ck_threshold *t = strcmp(k, "memory.available") == 0    ? &ret->memory_available
                                 : strcmp(k, "nodefs.available") == 0  ? &ret->nodefs_available
                                 : strcmp(k, "nodefs.inodesFree") == 0 ? &ret->nodefs_inodes_free
                                 : strcmp(k, "pid.available") == 0     ? &ret->pid_available
                                                                       : NULL;
        if (!t) { /* imagefs.*, allocatableMemory.available: nothing to measure here */
            CK_LOGS(1, "Eviction signal not measured", "signal", k);
            continue;
        }
        if ((r = parse_threshold(k, json_string_value(v), t, reterr)) < 0)
            break;
    }
    json_decref(defaults);
    return r;
}

int ck_pressure_measure(const char *root_dir, struct ck_pressure_sample *ret)
{
    memset(ret, 0, sizeof(*ret));
    FILE *f = fopen("/proc/meminfo", "re");
    char line[256];
    while (f && fgets(line, sizeof(line), f)) {
        long long kb;
        if (sscanf(line, "MemTotal: %lld kB", &kb) == 1)
            ret->memory_capacity = kb * 1024;
        else if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
            ret->memory_available = kb * 1024;
    }
    if (f)
        fclose(f);
    struct statvfs vfs;
    if (statvfs(root_dir, &vfs) == 0) {
        ret->nodefs_capacity = (int64_t)vfs.f_blocks * (int64_t)vfs.f_frsize;
        ret->nodefs_available = (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize;
        ret->inodes_capacity = (int64_t)vfs.f_files;
        ret->inodes_free = (int64_t)vfs.f_favail;
    }
    long long pid_max = 0, threads_max = 0;
    if ((f = fopen("/proc/sys/kernel/pid_max", "re"))) {
        if (fscanf(f, "%lld", &pid_max) != 1)
            pid_max = 0;
        fclose(f);
    }
    if ((f = fopen("/proc/sys/kernel/threads-max", "re"))) {
        if (fscanf(f, "%lld", &threads_max) == 1 && threads_max > 0 && threads_max < pid_max)
            pid_max = threads_max;
        fclose(f);
    }
    struct sysinfo si;
    ret->pid_capacity = pid_max;
    ret->pid_available = sysinfo(&si) == 0 ? pid_max - (int64_t)si.procs : pid_max;
    return ret->memory_capacity > 0 && ret->nodefs_capacity > 0 ? 0 : CK_EIO;
}

/* Whether available is below the threshold (a quantity, or a share of capacity). */
static bool below(const struct ck_threshold *t, int64_t available, int64_t capacity)
{
    if (!t->set || capacity <= 0)
        return false;
    double limit = t->percent >= 0 ? (double)capacity * t->percent / 100.0 : (double)t->quantity;
    return (double)available < limit;
}

void ck_pressure_evaluate(const struct ck_pressure_thresholds *t,
                          const struct ck_pressure_sample *s, struct ck_pressure *ret)
{
    ret->memory = below(&t->memory_available, s->memory_available, s->memory_capacity);
    ret->disk = below(&t->nodefs_available, s->nodefs_available, s->nodefs_capacity) ||
                below(&t->nodefs_inodes_free, s->inodes_free, s->inodes_capacity);
    ret->pid = below(&t->pid_available, s->pid_available, s->pid_capacity);
}
