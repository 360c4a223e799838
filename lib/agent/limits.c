/*
 * limits.c - containers' resources.limits for `ckube agent`: reading them from the pod
 * spec, and finding a delegated cgroup v2 in which each container gets its own cgroup
 * (process.c writes memory.max, cpu.max and pids.max there). Without such a cgroup the
 * agent falls back to rlimits (process.c): memory as RLIMIT_DATA only.
 *
 * The delegated cgroup is the agent's own (/proc/self/cgroup, "0::PATH") when it is
 * writable and has cgroup.subtree_control, as systemd's Delegate=yes gives. cgroup v2
 * lets a cgroup whose controllers are enabled for children hold no process, so the
 * agent first moves itself (and whatever else is there) into the child "ckube-agent";
 * a restarted agent that finds itself in "ckube-agent" uses its parent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckube/agent.h"
#include "ckube/api.h"
#include "ckube/internal/util.h"

#define AGENT_LEAF "ckube-agent"

static int64_t quantity_value(const json_t *q, bool milli)
{
    int64_t m = 0;
    const char *s = json_string_value(q);
    char num[32];
    if (json_is_integer(q)) {
        snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(q));
        s = num;
    }
    if (!s || ck_quantity_milli(s, &m) < 0 || m <= 0)
        return 0;
    return milli ? m : (m + 999) / 1000; /* Value() rounds up */
}

void ck_limits_from_container(const json_t *container, struct ck_limits *ret)
{
    const json_t *limits = json_object_get(json_object_get(container, "resources"), "limits");
    ret->memory_bytes = quantity_value(json_object_get(limits, "memory"), false);
    ret->cpu_milli = quantity_value(json_object_get(limits, "cpu"), true);
    ret->pids = quantity_value(json_object_get(limits, "pids"), false);
}

static bool read_small(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = 0;
    return true;
}

static bool write_small(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t w = write(fd, text, strlen(text));
    close(fd);
    return w == (ssize_t)strlen(text);
}

int ck_cgroup_setup(const char *mount, char *buf, size_t size, struct ck_err *reterr)
{
    char self[4096], dir[4096], path[4200], procs[8192];
    if (!mount)
        mount = "/sys/fs/cgroup";
    if (!read_small("/proc/self/cgroup", self, sizeof(self)))
        return ck_err_set(reterr, CK_ENOENT, "/proc/self/cgroup cannot be read");
    const char *v2 = strncmp(self, "0::", 3) == 0 ? self : strstr(self, "\n0::");
    if (!v2)
        return ck_err_set(reterr, CK_ENOENT, "no cgroup v2 hierarchy (cgroup v1 only)");
    v2 += v2 == self ? 3 : 4;
    size_t len = strcspn(v2, "\n");
    if (snprintf(dir, sizeof(dir), "%s%.*s", mount, (int)len, v2) >= (int)sizeof(dir))
        return ck_err_set(reterr, CK_ENOENT, "cgroup path too long");
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dir[--dl] = 0;
    const char *leaf = strrchr(dir, '/');
    if (leaf && strcmp(leaf + 1, AGENT_LEAF) == 0) /* set up by an earlier run */
        dir[leaf - dir] = 0;
    snprintf(path, sizeof(path), "%s/cgroup.controllers", dir);
    char controllers[512] = "";
    if (!read_small(path, controllers, sizeof(controllers)))
        return ck_err_set(reterr, CK_ENOENT, "%s is not a cgroup v2 directory", dir);
    snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
    if (access(path, W_OK) < 0 || access(dir, W_OK) < 0)
        return ck_err_set(reterr, CK_ENOENT, "cgroup %s is not delegated (not writable)", dir);
    snprintf(path, sizeof(path), "%s/%s", dir, AGENT_LEAF);
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return ck_err_set(reterr, CK_ENOENT, "cannot create %s: %s", path, strerror(errno));
    /* every process of dir moves to the leaf (one write per pid, as the kernel wants) */
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    if (read_small(path, procs, sizeof(procs))) {
        char target[4200];
        snprintf(target, sizeof(target), "%s/%s/cgroup.procs", dir, AGENT_LEAF);
        for (char *p = procs, *end; *p; p = end) {
            end = p + strcspn(p, "\n");
            if (*end)
                *end++ = 0;
            if (*p && !write_small(target, p))
                return ck_err_set(reterr, CK_ENOENT, "cannot move process %s into %s: %s", p,
                                  target, strerror(errno));
        }
    }
    char enable[64] = "";
    static const char *const wanted[] = {"memory", "cpu", "pids"};
    for (size_t i = 0; i < 3; i++) {
        size_t wl = strlen(wanted[i]);
        for (const char *c = controllers; *c; c += strcspn(c, " \n"), c += strspn(c, " \n"))
            if (strncmp(c, wanted[i], wl) == 0 && (c[wl] == ' ' || c[wl] == '\n' || !c[wl])) {
                snprintf(enable + strlen(enable), sizeof(enable) - strlen(enable), "%s+%s",
                         *enable ? " " : "", wanted[i]);
                break;
            }
    }
    snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
    if (*enable && !write_small(path, enable))
        return ck_err_set(reterr, CK_ENOENT, "cannot enable \"%s\" in %s: %s", enable, path,
                          strerror(errno));
    if (snprintf(buf, size, "%s", dir) >= (int)size)
        return ck_err_set(reterr, CK_ENOENT, "cgroup path too long");
    return 0;
}
