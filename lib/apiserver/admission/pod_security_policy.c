/*
 * pod_security_policy.c - the Pod Security Standards: levels, versions, the namespace
 * labels that choose them, and every check of the baseline and restricted levels.
 *
 * Mirrors k8s.io/pod-security-admission as Kubernetes 1.32 has it:
 *
 * - api/helpers.go: levels privileged, baseline, restricted; versions "latest" or
 *   "v1.<minor>"; PolicyToEvaluate, the labels pod-security.kubernetes.io/enforce,
 *   enforce-version, audit, audit-version, warn and warn-version over the defaults;
 * - policy/registry.go: each check has versions, from a minimum policy version on; a
 *   level at version v runs, for every check, the newest of its versions not newer
 *   than v (none when all are newer); restricted runs the baseline checks too, except
 *   those a restricted check's version at v overrides; baseline checks come first,
 *   then restricted ones, each group sorted by ID; versions past the newest any check
 *   has, and latest, are evaluated as that newest one (v1.32);
 * - policy/checks.go: the forbidden results aggregate into `reason (detail), ...`;
 * - policy/check_*.go: the 17 checks with their words. Sets of values are listed
 *   sorted and without repeats (sets.String.List()), lists of containers in the order
 *   met: init containers, containers, ephemeral containers.
 *
 * Pods are JSON as stored; a pointer Kubernetes tests for nil is a member that is
 * missing or null here, and an unset string is "".
 *
 * Not here: the relaxed rules for pods in user namespaces, behind the alpha gate
 * UserNamespacesPodSecurityStandards (off by default in 1.32; docs/differences.md).
 *
 * Threading: pure functions over their arguments.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "pod_security.h"

/* ---- small helpers --------------------------------------------------------------- */

/* A list of strings; a set when filled with strs_add_unique() and sorted. */
struct strs {
    char **v;
    size_t n, cap;
    bool nomem;
};

static void strs_add(struct strs *s, const char *str)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        char **v = ck__realloc(s->v, cap * sizeof(*v));
        if (!v) {
            s->nomem = true;
            return;
        }
        s->v = v, s->cap = cap;
    }
    char *copy = ck__strdup(str ? str : "");
    if (!copy) {
        s->nomem = true;
        return;
    }
    s->v[s->n++] = copy;
}

static void strs_add_unique(struct strs *s, const char *str)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], str ? str : "") == 0)
            return;
    strs_add(s, str);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void strs_sort(struct strs *s)
{
    if (s->n > 1)
        qsort(s->v, s->n, sizeof(*s->v), cmp_str);
}

static void strs_release(struct strs *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

/* `"a", "b"` (joinQuote). */
static void buf_join_quote(struct ck__buf *b, const struct strs *s)
{
    for (size_t i = 0; i < s->n; i++)
        ck__buf_printf(b, "%s\"%s\"", i ? ", " : "", s->v[i]);
}

static void buf_join(struct ck__buf *b, const struct strs *s, const char *sep)
{
    for (size_t i = 0; i < s->n; i++)
        ck__buf_printf(b, "%s%s", i ? sep : "", s->v[i]);
}

static const char *pluralize(const char *singular, const char *plural, size_t n)
{
    return n == 1 ? singular : plural;
}

/* s as Go's %q writes it: quoted, with quotes, backslashes and control bytes escaped. */
static void buf_go_quote(struct ck__buf *b, const char *s)
{
    ck__buf_adds(b, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '"':
            ck__buf_adds(b, "\\\"");
            break;
        case '\\':
            ck__buf_adds(b, "\\\\");
            break;
        case '\n':
            ck__buf_adds(b, "\\n");
            break;
        case '\t':
            ck__buf_adds(b, "\\t");
            break;
        case '\r':
            ck__buf_adds(b, "\\r");
            break;
        default:
            if (*c < 0x20 || *c == 0x7f)
                ck__buf_printf(b, "\\x%02x", *c);
            else
                ck__buf_add(b, c, 1);
        }
    }
    ck__buf_adds(b, "\"");
}

/* `key="value"` with the value as %q writes it. Caller frees; NULL out of memory. */
static char *annotation_text(const char *key, const char *value)
{
    struct ck__buf b = {0};
    ck__buf_printf(&b, "%s=", key);
    buf_go_quote(&b, value);
    return ck__buf_take(&b);
}

static const char *str_of(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

/* A member that Go would see as a non-nil pointer: present and not null. */
static const json_t *present(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return v && !json_is_null(v) ? v : NULL;
}

static bool is_windows(const json_t *spec)
{
    return strcmp(str_of(json_object_get(spec, "os"), "name"), "windows") == 0;
}

/* Calls fn for every container: init containers, containers, ephemeral containers. */
typedef void (*visit_fn)(const json_t *container, void *arg);
static void visit_containers(const json_t *spec, visit_fn fn, void *arg)
{
    static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
    for (size_t l = 0; l < 3; l++) {
        const json_t *list = json_object_get(spec, lists[l]);
        size_t i;
        const json_t *c;
        json_array_foreach(list, i, c) fn(c, arg);
    }
}

static const json_t *security_context(const json_t *container)
{
    return present(container, "securityContext");
}

/* ---- check results --------------------------------------------------------------- */

struct result {
    bool forbidden;
    const char *reason; /* static */
    char *detail;       /* owned; NULL out of memory */
    bool nomem;
};

/* Forbids with reason and the detail built in b (taken). */
static void forbid(struct result *r, const char *reason, struct ck__buf *b)
{
    r->forbidden = true;
    r->reason = reason;
    r->detail = ck__buf_take(b);
    if (!r->detail)
        r->nomem = true;
}

/* `container "a"` or `containers "a", "b"` */
static void buf_containers(struct ck__buf *b, const struct strs *names)
{
    ck__buf_printf(b, "%s ", pluralize("container", "containers", names->n));
    buf_join_quote(b, names);
}

typedef void (*check_fn)(const json_t *meta, const json_t *spec, struct result *r);

/* A check's setters (pod, containers) joined with " and " into b. */
static void buf_setters(struct ck__buf *b, bool pod, const struct strs *containers)
{
    if (pod)
        ck__buf_adds(b, "pod");
    if (containers->n) {
        if (pod)
            ck__buf_adds(b, " and ");
        buf_containers(b, containers);
    }
}

/* ---- baseline checks ------------------------------------------------------------- */

/* appArmorProfile: types other than RuntimeDefault and Localhost, and the old annotations. */
struct apparmor_visit {
    struct strs containers, values;
};

static bool allowed_apparmor_type(const char *type)
{
    return strcmp(type, "RuntimeDefault") == 0 || strcmp(type, "Localhost") == 0;
}

static void apparmor_container(const json_t *c, void *arg)
{
    struct apparmor_visit *v = arg;
    const json_t *profile = present(security_context(c), "appArmorProfile");
    if (profile && !allowed_apparmor_type(str_of(profile, "type"))) {
        strs_add(&v->containers, str_of(c, "name"));
        strs_add_unique(&v->values, str_of(profile, "type"));
    }
}

static void check_apparmor(const json_t *meta, const json_t *spec, struct result *r)
{
    struct apparmor_visit v = {0};
    struct strs annotations = {0};
    bool pod = false;
    const json_t *profile = present(present(spec, "securityContext"), "appArmorProfile");
    if (profile && !allowed_apparmor_type(str_of(profile, "type"))) {
        pod = true;
        strs_add_unique(&v.values, str_of(profile, "type"));
    }
    visit_containers(spec, apparmor_container, &v);
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)json_object_get(meta, "annotations"), key, value)
    {
        static const char prefix[] = "container.apparmor.security.beta.kubernetes.io/";
        const char *s = json_string_value(value);
        if (strncmp(key, prefix, sizeof(prefix) - 1) != 0 || !s || !*s ||
            strcmp(s, "runtime/default") == 0 || strncmp(s, "localhost/", 10) == 0)
            continue;
        char *text = annotation_text(key, s);
        if (text)
            strs_add(&annotations, text);
        else
            annotations.nomem = true;
        free(text);
    }
    strs_sort(&v.values);
    strs_sort(&annotations);
    for (size_t i = 0; i < annotations.n; i++)
        strs_add(&v.values, annotations.v[i]);
    if (pod || v.containers.n || annotations.n) {
        struct ck__buf b = {0};
        buf_setters(&b, pod, &v.containers);
        if (annotations.n)
            ck__buf_printf(&b, "%s%s", pod || v.containers.n ? " and " : "",
                           pluralize("annotation", "annotations", annotations.n));
        ck__buf_adds(&b, " must not set AppArmor profile type to ");
        buf_join_quote(&b, &v.values);
        forbid(r,
               pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", v.values.n),
               &b);
    }
    r->nomem |= v.containers.nomem || v.values.nomem || annotations.nomem;
    strs_release(&v.containers);
    strs_release(&v.values);
    strs_release(&annotations);
}

/* capabilities_baseline: only the container runtime's default set may be added. */
static const char *const default_capabilities[] = {
    "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",       "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SETUID", "SYS_CHROOT", NULL};

struct caps_visit {
    struct strs containers, caps;
};

static bool in_list(const char *s, const char *const *list)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

static void caps_baseline_container(const json_t *c, void *arg)
{
    struct caps_visit *v = arg;
    const json_t *add = json_object_get(present(security_context(c), "capabilities"), "add");
    bool valid = true;
    size_t i;
    const json_t *cap;
    json_array_foreach(add, i, cap)
    {
        const char *s = json_string_value(cap) ? json_string_value(cap) : "";
        if (!in_list(s, default_capabilities)) {
            valid = false;
            strs_add_unique(&v->caps, s);
        }
    }
    if (!valid)
        strs_add(&v->containers, str_of(c, "name"));
}

static void check_capabilities_baseline(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    struct caps_visit v = {0};
    visit_containers(spec, caps_baseline_container, &v);
    if (v.containers.n) {
        struct ck__buf b = {0};
        strs_sort(&v.caps);
        buf_containers(&b, &v.containers);
        ck__buf_adds(&b, " must not include ");
        buf_join_quote(&b, &v.caps);
        ck__buf_adds(&b, " in securityContext.capabilities.add");
        forbid(r, "non-default capabilities", &b);
    }
    r->nomem |= v.containers.nomem || v.caps.nomem;
    strs_release(&v.containers);
    strs_release(&v.caps);
}

/* hostNamespaces: hostNetwork, hostPID, hostIPC. */
static void check_host_namespaces(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    static const char *const fields[] = {"hostNetwork", "hostPID", "hostIPC"};
    struct ck__buf b = {0};
    bool any = false;
    for (size_t i = 0; i < 3; i++)
        if (json_is_true(json_object_get(spec, fields[i]))) {
            ck__buf_printf(&b, "%s%s=true", any ? ", " : "", fields[i]);
            any = true;
        }
    if (any)
        forbid(r, "host namespaces", &b);
}

/* hostPathVolumes */
static void check_host_path_volumes(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    struct strs names = {0};
    size_t i;
    const json_t *vol;
    json_array_foreach(json_object_get(spec, "volumes"), i, vol)
    {
        if (present(vol, "hostPath"))
            strs_add(&names, str_of(vol, "name"));
    }
    if (names.n) {
        struct ck__buf b = {0};
        ck__buf_printf(&b, "%s ", pluralize("volume", "volumes", names.n));
        buf_join_quote(&b, &names);
        forbid(r, "hostPath volumes", &b);
    }
    r->nomem |= names.nomem;
    strs_release(&names);
}

/* hostPorts */
struct ports_visit {
    struct strs containers, ports;
};

static void host_ports_container(const json_t *c, void *arg)
{
    struct ports_visit *v = arg;
    bool valid = true;
    size_t i;
    const json_t *port;
    json_array_foreach(json_object_get(c, "ports"), i, port)
    {
        json_int_t hp = json_integer_value(json_object_get(port, "hostPort"));
        if (hp != 0) {
            char text[32];
            snprintf(text, sizeof(text), "%d", (int)(int32_t)hp);
            valid = false;
            strs_add_unique(&v->ports, text);
        }
    }
    if (!valid)
        strs_add(&v->containers, str_of(c, "name"));
}

static void check_host_ports(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    struct ports_visit v = {0};
    visit_containers(spec, host_ports_container, &v);
    if (v.containers.n) {
        struct ck__buf b = {0};
        strs_sort(&v.ports);
        buf_containers(&b, &v.containers);
        ck__buf_printf(&b, " %s %s ", pluralize("uses", "use", v.containers.n),
                       pluralize("hostPort", "hostPorts", v.ports.n));
        buf_join(&b, &v.ports, ", ");
        forbid(r, "hostPort", &b);
    }
    r->nomem |= v.containers.nomem || v.ports.nomem;
    strs_release(&v.containers);
    strs_release(&v.ports);
}

/* privileged */
static void privileged_container(const json_t *c, void *arg)
{
    if (json_is_true(json_object_get(security_context(c), "privileged")))
        strs_add(arg, str_of(c, "name"));
}

static void check_privileged(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    struct strs names = {0};
    visit_containers(spec, privileged_container, &names);
    if (names.n) {
        struct ck__buf b = {0};
        buf_containers(&b, &names);
        ck__buf_adds(&b, " must not set securityContext.privileged=true");
        forbid(r, "privileged", &b);
    }
    r->nomem |= names.nomem;
    strs_release(&names);
}

/* procMount: only Default. */
struct proc_visit {
    struct strs containers, types;
};

static void proc_mount_container(const json_t *c, void *arg)
{
    struct proc_visit *v = arg;
    const json_t *pm = present(security_context(c), "procMount");
    const char *type = json_string_value(pm) ? json_string_value(pm) : "";
    if (pm && strcmp(type, "Default") != 0) {
        strs_add(&v->containers, str_of(c, "name"));
        strs_add_unique(&v->types, type);
    }
}

static void check_proc_mount(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    struct proc_visit v = {0};
    visit_containers(spec, proc_mount_container, &v);
    if (v.containers.n) {
        struct ck__buf b = {0};
        strs_sort(&v.types);
        buf_containers(&b, &v.containers);
        ck__buf_adds(&b, " must not set securityContext.procMount to ");
        buf_join_quote(&b, &v.types);
        forbid(r, "procMount", &b);
    }
    r->nomem |= v.containers.nomem || v.types.nomem;
    strs_release(&v.containers);
    strs_release(&v.types);
}

/* seLinuxOptions: allowed types (by version); user and role never. */
static const char *const selinux_types_1_0[] = {"", "container_t", "container_init_t",
                                                "container_kvm_t", NULL};
static const char *const selinux_types_1_31[] = {
    "", "container_t", "container_init_t", "container_kvm_t", "container_engine_t", NULL};

struct selinux_visit {
    const char *const *allowed;
    struct strs containers, types;
    bool user, role;
};

static bool selinux_valid(struct selinux_visit *v, const json_t *opts)
{
    bool valid = true;
    const char *type = str_of(opts, "type");
    if (!in_list(type, v->allowed)) {
        valid = false;
        strs_add_unique(&v->types, type);
    }
    if (*str_of(opts, "user"))
        valid = false, v->user = true;
    if (*str_of(opts, "role"))
        valid = false, v->role = true;
    return valid;
}

static void selinux_container(const json_t *c, void *arg)
{
    struct selinux_visit *v = arg;
    const json_t *opts = present(security_context(c), "seLinuxOptions");
    if (opts && !selinux_valid(v, opts))
        strs_add(&v->containers, str_of(c, "name"));
}

static void check_selinux(const json_t *spec, const char *const *allowed, struct result *r)
{
    struct selinux_visit v = {.allowed = allowed};
    bool pod = false;
    const json_t *opts = present(present(spec, "securityContext"), "seLinuxOptions");
    if (opts && !selinux_valid(&v, opts))
        pod = true;
    visit_containers(spec, selinux_container, &v);
    if (pod || v.containers.n) {
        struct ck__buf b = {0};
        buf_setters(&b, pod, &v.containers);
        ck__buf_adds(&b, " set forbidden securityContext.seLinuxOptions: ");
        const char *sep = "";
        if (v.types.n) {
            strs_sort(&v.types);
            ck__buf_printf(&b, "%s ", pluralize("type", "types", v.types.n));
            buf_join_quote(&b, &v.types);
            sep = "; ";
        }
        if (v.user) {
            ck__buf_printf(&b, "%suser may not be set", sep);
            sep = "; ";
        }
        if (v.role)
            ck__buf_printf(&b, "%srole may not be set", sep);
        forbid(r, "seLinuxOptions", &b);
    }
    r->nomem |= v.containers.nomem || v.types.nomem;
    strs_release(&v.containers);
    strs_release(&v.types);
}

static void check_selinux_1_0(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    check_selinux(spec, selinux_types_1_0, r);
}

static void check_selinux_1_31(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    check_selinux(spec, selinux_types_1_31, r);
}

/* seccompProfile_baseline: before v1.19 the annotations, from v1.19 the fields. */
#define SECCOMP_POD_ANNOTATION       "seccomp.security.alpha.kubernetes.io/pod"
#define SECCOMP_CONTAINER_ANNOTATION "container.seccomp.security.alpha.kubernetes.io/"

static bool valid_seccomp_annotation(const char *v)
{
    return strcmp(v, "runtime/default") == 0 || strcmp(v, "docker/default") == 0 ||
           strncmp(v, "localhost/", 10) == 0;
}

struct seccomp_annotations_visit {
    const json_t *annotations;
    struct strs forbidden;
};

static void seccomp_annotation(struct seccomp_annotations_visit *v, const char *key)
{
    const json_t *value = json_object_get(v->annotations, key);
    const char *s = json_string_value(value);
    if (!value || valid_seccomp_annotation(s ? s : ""))
        return;
    char *text = annotation_text(key, s ? s : "");
    if (text)
        strs_add_unique(&v->forbidden, text);
    else
        v->forbidden.nomem = true;
    free(text);
}

static void seccomp_annotation_container(const json_t *c, void *arg)
{
    char key[512];
    snprintf(key, sizeof(key), "%s%s", SECCOMP_CONTAINER_ANNOTATION, str_of(c, "name"));
    seccomp_annotation(arg, key);
}

static void check_seccomp_baseline_1_0(const json_t *meta, const json_t *spec, struct result *r)
{
    struct seccomp_annotations_visit v = {.annotations = json_object_get(meta, "annotations")};
    seccomp_annotation(&v, SECCOMP_POD_ANNOTATION);
    visit_containers(spec, seccomp_annotation_container, &v);
    if (v.forbidden.n) {
        struct ck__buf b = {0};
        strs_sort(&v.forbidden);
        ck__buf_printf(&b, "forbidden %s ", pluralize("annotation", "annotations", v.forbidden.n));
        buf_join(&b, &v.forbidden, ", ");
        forbid(r, "seccompProfile", &b);
    }
    r->nomem |= v.forbidden.nomem;
    strs_release(&v.forbidden);
}

static bool valid_seccomp_type(const char *type)
{
    return strcmp(type, "Localhost") == 0 || strcmp(type, "RuntimeDefault") == 0;
}

struct seccomp_visit {
    bool pod_set; /* the pod sets a valid profile */
    struct strs explicit, implicit, values;
};

static void seccomp_container(const json_t *c, void *arg)
{
    struct seccomp_visit *v = arg;
    const json_t *profile = present(security_context(c), "seccompProfile");
    if (profile) {
        if (!valid_seccomp_type(str_of(profile, "type"))) {
            strs_add(&v->explicit, str_of(c, "name"));
            strs_add_unique(&v->values, str_of(profile, "type"));
        }
    } else if (!v->pod_set) {
        strs_add(&v->implicit, str_of(c, "name"));
    }
}

/* Both seccomp checks from v1.19: restricted also requires a profile somewhere. */
static void check_seccomp(const json_t *spec, bool required, struct result *r)
{
    struct seccomp_visit v = {0};
    bool pod = false;
    const json_t *profile = present(present(spec, "securityContext"), "seccompProfile");
    if (profile) {
        if (!valid_seccomp_type(str_of(profile, "type"))) {
            pod = true;
            strs_add_unique(&v.values, str_of(profile, "type"));
        } else {
            v.pod_set = true;
        }
    }
    visit_containers(spec, seccomp_container, &v);
    if (pod || v.explicit.n) {
        struct ck__buf b = {0};
        strs_sort(&v.values);
        buf_setters(&b, pod, &v.explicit);
        ck__buf_adds(&b, " must not set securityContext.seccompProfile.type to ");
        buf_join_quote(&b, &v.values);
        forbid(r, "seccompProfile", &b);
    } else if (required && v.implicit.n) {
        struct ck__buf b = {0};
        ck__buf_adds(&b, "pod or ");
        buf_containers(&b, &v.implicit);
        ck__buf_adds(&b, " must set securityContext.seccompProfile.type to \"RuntimeDefault\" or "
                         "\"Localhost\"");
        forbid(r, "seccompProfile", &b);
    }
    r->nomem |= v.explicit.nomem || v.implicit.nomem || v.values.nomem;
    strs_release(&v.explicit);
    strs_release(&v.implicit);
    strs_release(&v.values);
}

static void check_seccomp_baseline_1_19(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    check_seccomp(spec, false, r);
}

/* sysctls: the safe set, which grew in v1.27, v1.29 and v1.32. */
static const char *const sysctls_1_0[] = {
    "kernel.shm_rmid_forced",    "net.ipv4.ip_local_port_range",        "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", NULL};
static const char *const sysctls_1_27[] = {"net.ipv4.ip_local_reserved_ports", NULL};
static const char *const sysctls_1_29[] = {
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes", NULL};
static const char *const sysctls_1_32[] = {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", NULL};

static void check_sysctls(const json_t *spec, int since, struct result *r)
{
    struct strs bad = {0};
    size_t i;
    const json_t *sysctl;
    json_array_foreach(json_object_get(present(spec, "securityContext"), "sysctls"), i, sysctl)
    {
        const char *name = str_of(sysctl, "name");
        bool safe = in_list(name, sysctls_1_0) || (since >= 27 && in_list(name, sysctls_1_27)) ||
                    (since >= 29 && in_list(name, sysctls_1_29)) ||
                    (since >= 32 && in_list(name, sysctls_1_32));
        if (!safe)
            strs_add(&bad, name);
    }
    if (bad.n) {
        struct ck__buf b = {0};
        buf_join(&b, &bad, ", ");
        forbid(r, "forbidden sysctls", &b);
    }
    r->nomem |= bad.nomem;
    strs_release(&bad);
}

static void check_sysctls_1_0(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    check_sysctls(spec, 0, r);
}
static void check_sysctls_1_27(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    check_sysctls(spec, 27, r);
}
static void check_sysctls_1_29(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    check_sysctls(spec, 29, r);
}
static void check_sysctls_1_32(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    check_sysctls(spec, 32, r);
}

/* windowsHostProcess */
static void host_process_container(const json_t *c, void *arg)
{
    const json_t *opts = present(security_context(c), "windowsOptions");
    if (json_is_true(json_object_get(opts, "hostProcess")))
        strs_add(arg, str_of(c, "name"));
}

static void check_windows_host_process(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    struct strs names = {0};
    visit_containers(spec, host_process_container, &names);
    bool pod = json_is_true(json_object_get(
        present(present(spec, "securityContext"), "windowsOptions"), "hostProcess"));
    if (pod || names.n) {
        struct ck__buf b = {0};
        buf_setters(&b, pod, &names);
        ck__buf_adds(&b, " must not set securityContext.windowsOptions.hostProcess=true");
        forbid(r, "hostProcess", &b);
    }
    r->nomem |= names.nomem;
    strs_release(&names);
}

/* ---- restricted checks ----------------------------------------------------------- */

/* allowPrivilegeEscalation: must be false; from v1.25 not asked of Windows pods. */
static void ape_container(const json_t *c, void *arg)
{
    if (!json_is_false(json_object_get(security_context(c), "allowPrivilegeEscalation")))
        strs_add(arg, str_of(c, "name"));
}

static void check_ape_1_8(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    struct strs names = {0};
    visit_containers(spec, ape_container, &names);
    if (names.n) {
        struct ck__buf b = {0};
        buf_containers(&b, &names);
        ck__buf_adds(&b, " must set securityContext.allowPrivilegeEscalation=false");
        forbid(r, "allowPrivilegeEscalation != false", &b);
    }
    r->nomem |= names.nomem;
    strs_release(&names);
}

static void check_ape_1_25(const json_t *meta, const json_t *spec, struct result *r)
{
    if (!is_windows(spec))
        check_ape_1_8(meta, spec, r);
}

/* capabilities_restricted: drop ALL, add nothing but NET_BIND_SERVICE. */
struct caps_restricted_visit {
    struct strs missing_drop, adding, caps;
};

static void caps_restricted_container(const json_t *c, void *arg)
{
    struct caps_restricted_visit *v = arg;
    const json_t *caps = present(security_context(c), "capabilities");
    if (!caps) {
        strs_add(&v->missing_drop, str_of(c, "name"));
        return;
    }
    bool dropped_all = false;
    size_t i;
    const json_t *cap;
    json_array_foreach(json_object_get(caps, "drop"), i, cap)
    {
        if (json_string_value(cap) && strcmp(json_string_value(cap), "ALL") == 0) {
            dropped_all = true;
            break;
        }
    }
    if (!dropped_all)
        strs_add(&v->missing_drop, str_of(c, "name"));
    bool forbidden = false;
    json_array_foreach(json_object_get(caps, "add"), i, cap)
    {
        const char *s = json_string_value(cap) ? json_string_value(cap) : "";
        if (strcmp(s, "NET_BIND_SERVICE") != 0) {
            forbidden = true;
            strs_add_unique(&v->caps, s);
        }
    }
    if (forbidden)
        strs_add(&v->adding, str_of(c, "name"));
}

static void check_caps_restricted_1_22(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    struct caps_restricted_visit v = {0};
    visit_containers(spec, caps_restricted_container, &v);
    if (v.missing_drop.n || v.adding.n) {
        struct ck__buf b = {0};
        if (v.missing_drop.n) {
            buf_containers(&b, &v.missing_drop);
            ck__buf_adds(&b, " must set securityContext.capabilities.drop=[\"ALL\"]");
        }
        if (v.adding.n) {
            strs_sort(&v.caps);
            if (v.missing_drop.n)
                ck__buf_adds(&b, "; ");
            buf_containers(&b, &v.adding);
            ck__buf_adds(&b, " must not include ");
            buf_join_quote(&b, &v.caps);
            ck__buf_adds(&b, " in securityContext.capabilities.add");
        }
        forbid(r, "unrestricted capabilities", &b);
    }
    r->nomem |= v.missing_drop.nomem || v.adding.nomem || v.caps.nomem;
    strs_release(&v.missing_drop);
    strs_release(&v.adding);
    strs_release(&v.caps);
}

static void check_caps_restricted_1_25(const json_t *meta, const json_t *spec, struct result *r)
{
    if (!is_windows(spec))
        check_caps_restricted_1_22(meta, spec, r);
}

/* restrictedVolumes: only the volume types that cannot reach the host. */
static void check_restricted_volumes(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    static const char *const allowed[] = {"configMap", "csi",       "downwardAPI",
                                          "emptyDir",  "ephemeral", "persistentVolumeClaim",
                                          "projected", "secret",    NULL};
    /* the types named, in the order Kubernetes tests them; any other is "unknown" */
    static const char *const named[] = {"hostPath",
                                        "gcePersistentDisk",
                                        "awsElasticBlockStore",
                                        "gitRepo",
                                        "nfs",
                                        "iscsi",
                                        "glusterfs",
                                        "rbd",
                                        "flexVolume",
                                        "cinder",
                                        "cephfs",
                                        "flocker",
                                        "fc",
                                        "azureFile",
                                        "vsphereVolume",
                                        "quobyte",
                                        "azureDisk",
                                        "photonPersistentDisk",
                                        "portworxVolume",
                                        "scaleIO",
                                        "storageos",
                                        NULL};
    struct strs names = {0}, types = {0};
    size_t i;
    const json_t *vol;
    json_array_foreach(json_object_get(spec, "volumes"), i, vol)
    {
        bool ok = false;
        for (size_t k = 0; allowed[k] && !ok; k++)
            ok = present(vol, allowed[k]) != NULL;
        if (ok)
            continue;
        strs_add(&names, str_of(vol, "name"));
        const char *type = "unknown";
        for (size_t k = 0; named[k]; k++)
            if (present(vol, named[k])) {
                type = named[k];
                break;
            }
        strs_add_unique(&types, type);
    }
    if (names.n) {
        struct ck__buf b = {0};
        strs_sort(&types);
        ck__buf_printf(&b, "%s ", pluralize("volume", "volumes", names.n));
        buf_join_quote(&b, &names);
        ck__buf_printf(&b, " %s %s ", pluralize("uses", "use", names.n),
                       pluralize("restricted volume type", "restricted volume types", types.n));
        buf_join_quote(&b, &types);
        forbid(r, "restricted volume types", &b);
    }
    r->nomem |= names.nomem || types.nomem;
    strs_release(&names);
    strs_release(&types);
}

/* runAsNonRoot: true on the pod or on every container; false nowhere. */
struct non_root_visit {
    bool pod_non_root;
    struct strs explicit, implicit;
};

static void non_root_container(const json_t *c, void *arg)
{
    struct non_root_visit *v = arg;
    const json_t *nr = present(security_context(c), "runAsNonRoot");
    if (nr) {
        if (!json_is_true(nr))
            strs_add(&v->explicit, str_of(c, "name"));
    } else if (!v->pod_non_root) {
        strs_add(&v->implicit, str_of(c, "name"));
    }
}

static void check_run_as_non_root(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    struct non_root_visit v = {0};
    bool pod = false;
    const json_t *nr = present(present(spec, "securityContext"), "runAsNonRoot");
    if (nr) {
        if (!json_is_true(nr))
            pod = true;
        else
            v.pod_non_root = true;
    }
    visit_containers(spec, non_root_container, &v);
    if (pod || v.explicit.n) {
        struct ck__buf b = {0};
        buf_setters(&b, pod, &v.explicit);
        ck__buf_adds(&b, " must not set securityContext.runAsNonRoot=false");
        forbid(r, "runAsNonRoot != true", &b);
    } else if (v.implicit.n) {
        struct ck__buf b = {0};
        ck__buf_adds(&b, "pod or ");
        buf_containers(&b, &v.implicit);
        ck__buf_adds(&b, " must set securityContext.runAsNonRoot=true");
        forbid(r, "runAsNonRoot != true", &b);
    }
    r->nomem |= v.explicit.nomem || v.implicit.nomem;
    strs_release(&v.explicit);
    strs_release(&v.implicit);
}

/* runAsUser: never 0 (from v1.23). */
static bool runs_as_root(const json_t *sc)
{
    const json_t *uid = json_object_get(sc, "runAsUser");
    return json_is_integer(uid) && json_integer_value(uid) == 0;
}

static void run_as_user_container(const json_t *c, void *arg)
{
    if (runs_as_root(security_context(c)))
        strs_add(arg, str_of(c, "name"));
}

static void check_run_as_user(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    struct strs names = {0};
    bool pod = runs_as_root(present(spec, "securityContext"));
    visit_containers(spec, run_as_user_container, &names);
    if (pod || names.n) {
        struct ck__buf b = {0};
        buf_setters(&b, pod, &names);
        ck__buf_adds(&b, " must not set runAsUser=0");
        forbid(r, "runAsUser=0", &b);
    }
    r->nomem |= names.nomem;
    strs_release(&names);
}

/* seccompProfile_restricted: a valid profile on the pod or on every container. */
static void check_seccomp_restricted_1_19(const json_t *meta, const json_t *spec, struct result *r)
{
    (void)meta;
    check_seccomp(spec, true, r);
}

static void check_seccomp_restricted_1_25(const json_t *meta, const json_t *spec, struct result *r)
{
    if (!is_windows(spec))
        check_seccomp_restricted_1_19(meta, spec, r);
}

/* ---- the registry ---------------------------------------------------------------- */

struct versioned_check {
    int minor; /* from v1.<minor> on */
    check_fn fn;
    const char *overrides; /* a baseline check this one replaces at restricted, or NULL */
};

struct check {
    const char *id;
    enum ck__psa_level level;
    struct versioned_check versions[4]; /* increasing minor; fn NULL ends */
};

/* Baseline checks, then restricted ones, each sorted by ID as Go sorts strings (bytes). */
static const struct check checks[] = {
    {"appArmorProfile", CK__PSA_BASELINE, {{0, check_apparmor, NULL}}},
    {"capabilities_baseline", CK__PSA_BASELINE, {{0, check_capabilities_baseline, NULL}}},
    {"hostNamespaces", CK__PSA_BASELINE, {{0, check_host_namespaces, NULL}}},
    {"hostPathVolumes", CK__PSA_BASELINE, {{0, check_host_path_volumes, NULL}}},
    {"hostPorts", CK__PSA_BASELINE, {{0, check_host_ports, NULL}}},
    {"privileged", CK__PSA_BASELINE, {{0, check_privileged, NULL}}},
    {"procMount", CK__PSA_BASELINE, {{0, check_proc_mount, NULL}}},
    {"seLinuxOptions",
     CK__PSA_BASELINE,
     {{0, check_selinux_1_0, NULL}, {31, check_selinux_1_31, NULL}}},
    {"seccompProfile_baseline",
     CK__PSA_BASELINE,
     {{0, check_seccomp_baseline_1_0, NULL}, {19, check_seccomp_baseline_1_19, NULL}}},
    {"sysctls",
     CK__PSA_BASELINE,
     {{0, check_sysctls_1_0, NULL},
      {27, check_sysctls_1_27, NULL},
      {29, check_sysctls_1_29, NULL},
      {32, check_sysctls_1_32, NULL}}},
    {"windowsHostProcess", CK__PSA_BASELINE, {{0, check_windows_host_process, NULL}}},
    {"allowPrivilegeEscalation",
     CK__PSA_RESTRICTED,
     {{8, check_ape_1_8, NULL}, {25, check_ape_1_25, NULL}}},
    {"capabilities_restricted",
     CK__PSA_RESTRICTED,
     {{22, check_caps_restricted_1_22, "capabilities_baseline"},
      {25, check_caps_restricted_1_25, "capabilities_baseline"}}},
    {"restrictedVolumes", CK__PSA_RESTRICTED, {{0, check_restricted_volumes, "hostPathVolumes"}}},
    {"runAsNonRoot", CK__PSA_RESTRICTED, {{0, check_run_as_non_root, NULL}}},
    {"runAsUser", CK__PSA_RESTRICTED, {{23, check_run_as_user, NULL}}},
    {"seccompProfile_restricted",
     CK__PSA_RESTRICTED,
     {{19, check_seccomp_restricted_1_19, "seccompProfile_baseline"},
      {25, check_seccomp_restricted_1_25, "seccompProfile_baseline"}}},
};
#define N_CHECKS (sizeof(checks) / sizeof(checks[0]))

const char *ck__psa_check_id(size_t i)
{
    return i < N_CHECKS ? checks[i].id : NULL;
}

long long ck__psa_max_minor(void)
{
    int max = 0;
    for (size_t i = 0; i < N_CHECKS; i++)
        for (size_t k = 0; k < 4 && checks[i].versions[k].fn; k++)
            if (checks[i].versions[k].minor > max)
                max = checks[i].versions[k].minor;
    return max;
}

/* The version of c that applies at v1.<minor>, or NULL when c is newer. */
static const struct versioned_check *at_version(const struct check *c, long long minor)
{
    const struct versioned_check *found = NULL;
    for (size_t k = 0; k < 4 && c->versions[k].fn; k++)
        if (c->versions[k].minor <= minor)
            found = &c->versions[k];
    return found;
}

/* Whether a restricted check at v1.<minor> replaces the baseline check id. */
static bool overridden(const char *id, long long minor)
{
    for (size_t i = 0; i < N_CHECKS; i++) {
        if (checks[i].level != CK__PSA_RESTRICTED)
            continue;
        const struct versioned_check *vc = at_version(&checks[i], minor);
        if (vc && vc->overrides && strcmp(vc->overrides, id) == 0)
            return true;
    }
    return false;
}

int ck__psa_evaluate(const struct ck__psa_level_version *lv, const json_t *meta, const json_t *spec,
                     char **ret_reasons, char **ret_detail)
{
    *ret_detail = NULL;
    if (ret_reasons)
        *ret_reasons = NULL;
    if (lv->level == CK__PSA_PRIVILEGED)
        return 0;
    long long max = ck__psa_max_minor();
    long long minor = lv->latest || lv->minor > max ? max : lv->minor;
    struct ck__buf detail = {0}, reasons = {0};
    size_t n = 0;
    bool nomem = false;
    for (size_t i = 0; i < N_CHECKS; i++) {
        const struct check *c = &checks[i];
        if (c->level == CK__PSA_RESTRICTED && lv->level != CK__PSA_RESTRICTED)
            continue;
        const struct versioned_check *vc = at_version(c, minor);
        if (!vc)
            continue;
        if (c->level == CK__PSA_BASELINE && lv->level == CK__PSA_RESTRICTED &&
            overridden(c->id, minor))
            continue;
        struct result r = {0};
        vc->fn(meta, spec, &r);
        nomem |= r.nomem;
        if (r.forbidden && r.detail) {
            const char *reason = r.reason && *r.reason ? r.reason : "unknown forbidden reason";
            ck__buf_printf(&reasons, "%s%s", n ? ", " : "", reason);
            ck__buf_printf(&detail, "%s%s", n ? ", " : "", reason);
            if (*r.detail)
                ck__buf_printf(&detail, " (%s)", r.detail);
            n++;
        }
        free(r.detail);
    }
    char *d = n ? ck__buf_take(&detail) : NULL;
    char *rs = n ? ck__buf_take(&reasons) : NULL;
    ck__buf_release(&detail);
    ck__buf_release(&reasons);
    if (nomem || (n && (!d || !rs))) {
        free(d);
        free(rs);
        return CK_ENOMEM;
    }
    *ret_detail = d;
    if (ret_reasons)
        *ret_reasons = rs;
    else
        free(rs);
    return 0;
}

/* ---- levels, versions and labels ------------------------------------------------- */

const char *ck__psa_level_name(enum ck__psa_level level)
{
    switch (level) {
    case CK__PSA_PRIVILEGED:
        return "privileged";
    case CK__PSA_BASELINE:
        return "baseline";
    default:
        return "restricted";
    }
}

void ck__psa_level_version_string(const struct ck__psa_level_version *lv, char *buf, size_t size)
{
    if (lv->latest)
        snprintf(buf, size, "%s:latest", ck__psa_level_name(lv->level));
    else
        snprintf(buf, size, "%s:v1.%lld", ck__psa_level_name(lv->level), lv->minor);
}

bool ck__psa_level_version_equal(const struct ck__psa_level_version *a,
                                 const struct ck__psa_level_version *b)
{
    return a->level == b->level && a->latest == b->latest && (a->latest || a->minor == b->minor);
}

void ck__psa_default_policy(struct ck__psa_policy *ret)
{
    struct ck__psa_level_version lv = {CK__PSA_PRIVILEGED, true, 0};
    ret->enforce = ret->audit = ret->warn = lv;
}

/* api.ParseLevel: false (and restricted) for anything but the three names. */
static bool parse_level(const char *s, enum ck__psa_level *ret)
{
    static const enum ck__psa_level levels[] = {CK__PSA_PRIVILEGED, CK__PSA_BASELINE,
                                                CK__PSA_RESTRICTED};
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
        if (strcmp(s, ck__psa_level_name(levels[i])) == 0) {
            *ret = levels[i];
            return true;
        }
    *ret = CK__PSA_RESTRICTED;
    return false;
}

/* api.ParseVersion: "latest" or ^v1\.(0|[1-9][0-9]*)$ fitting an int; else latest, false. */
static bool parse_version(const char *s, struct ck__psa_level_version *lv)
{
    lv->latest = true;
    lv->minor = 0;
    if (strcmp(s, "latest") == 0)
        return true;
    if (strncmp(s, "v1.", 3) != 0)
        return false;
    const char *digits = s + 3;
    size_t n = strspn(digits, "0123456789");
    if (n == 0 || digits[n] != '\0' || (n > 1 && digits[0] == '0'))
        return false;
    errno = 0;
    long long minor = strtoll(digits, NULL, 10);
    if (errno == ERANGE)
        return false;
    lv->latest = false;
    lv->minor = minor;
    return true;
}

static void invalid_label(struct ck_field_errors *errs, const char *label, const char *value,
                          const char *why)
{
    char field[128];
    snprintf(field, sizeof(field), "metadata.labels[%s]", label);
    ck_field_errors_add(errs, CK_FIELD_TYPE_INVALID, field, value, true, "%s", why);
}

static const char level_error[] = "must be one of privileged, baseline, restricted";
static const char version_error[] = "must be \"latest\" or \"v1.x\"";

void ck__psa_policy_from_labels(const json_t *labels, const struct ck__psa_policy *defaults,
                                struct ck__psa_policy *ret, struct ck_field_errors *errs)
{
    *ret = *defaults;
    bool has_enforce_level = false, has_warn_level = false, has_warn_version = false;
    const char *v;
#define LABEL(name) json_string_value(json_object_get(labels, CK__PSA_LABEL_PREFIX name))
    if ((v = LABEL("enforce"))) {
        has_enforce_level = parse_level(v, &ret->enforce.level);
        if (!has_enforce_level)
            invalid_label(errs, CK__PSA_LABEL_PREFIX "enforce", v, level_error);
    }
    if ((v = LABEL("enforce-version")) && !parse_version(v, &ret->enforce))
        invalid_label(errs, CK__PSA_LABEL_PREFIX "enforce-version", v, version_error);
    if ((v = LABEL("audit")) && !parse_level(v, &ret->audit.level)) {
        invalid_label(errs, CK__PSA_LABEL_PREFIX "audit", v, level_error);
        ret->audit.level = CK__PSA_PRIVILEGED; /* fail open */
    }
    if ((v = LABEL("audit-version")) && !parse_version(v, &ret->audit))
        invalid_label(errs, CK__PSA_LABEL_PREFIX "audit-version", v, version_error);
    if ((v = LABEL("warn"))) {
        has_warn_level = true;
        if (!parse_level(v, &ret->warn.level)) {
            invalid_label(errs, CK__PSA_LABEL_PREFIX "warn", v, level_error);
            ret->warn.level = CK__PSA_PRIVILEGED; /* fail open */
        }
    }
    if ((v = LABEL("warn-version"))) {
        has_warn_version = true;
        if (!parse_version(v, &ret->warn))
            invalid_label(errs, CK__PSA_LABEL_PREFIX "warn-version", v, version_error);
    }
#undef LABEL
    /* warn follows an enforce level set stricter than it */
    if (!has_warn_level && has_enforce_level && ret->enforce.level > ret->warn.level) {
        ret->warn.level = ret->enforce.level;
        if (!has_warn_version) {
            ret->warn.latest = ret->enforce.latest;
            ret->warn.minor = ret->enforce.minor;
        }
    }
}

/* ---- the plugin's configuration (admission/api: PodSecurityConfiguration) ------------- */

/* defaults.<mode> and defaults.<mode>-version into lv: unset or "" is privileged / latest. */
static void config_level(const json_t *defaults, const char *mode, struct ck__psa_level_version *lv,
                         struct ck_field_errors *errs)
{
    char field[64], version_key[32];
    snprintf(version_key, sizeof(version_key), "%s-version", mode);
    const char *level = json_string_value(json_object_get(defaults, mode));
    const char *version = json_string_value(json_object_get(defaults, version_key));
    if (!level || !*level)
        level = "privileged";
    if (!version || !*version)
        version = "latest";
    snprintf(field, sizeof(field), "defaults.%s", mode);
    if (!parse_level(level, &lv->level))
        ck_field_errors_add(errs, CK_FIELD_INVALID, field, level, true, "%s", level_error);
    snprintf(field, sizeof(field), "defaults.%s", version_key);
    if (!parse_version(version, lv))
        ck_field_errors_add(errs, CK_FIELD_INVALID, field, version, true, "%s", version_error);
}

/* exemptions.<key>: the names checked (check NULL: not empty), without duplicates. */
static json_t *config_exemptions(const json_t *exemptions, const char *key,
                                 bool (*check)(const char *, const char *,
                                               struct ck_field_errors *),
                                 struct ck_field_errors *errs)
{
    json_t *out = json_array();
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(exemptions, key), i, v)
    {
        char field[96];
        snprintf(field, sizeof(field), "exemptions.%s[%zu]", key, i);
        const char *s = json_string_value(v) ? json_string_value(v) : "";
        if (check ? !check(s, field, errs) : !*s) {
            if (!check)
                ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, NULL);
            continue;
        }
        bool dup = false;
        size_t j;
        const json_t *seen;
        json_array_foreach(out, j, seen)
        {
            dup |= strcmp(json_string_value(seen), s) == 0;
        }
        if (dup)
            ck_field_errors_add(errs, CK_FIELD_DUPLICATE, field, s, true, NULL);
        else if (json_array_append_new(out, json_string(s)) < 0)
            errs->nomem = true;
    }
    return out;
}

static bool dns_label(const char *s, const char *field, struct ck_field_errors *errs)
{
    return ck_validate_dns1123_label(s, field, errs);
}

static bool dns_subdomain(const char *s, const char *field, struct ck_field_errors *errs)
{
    return ck_validate_dns1123_subdomain(s, field, errs);
}

void ck__psa_config_free(struct ck__psa_config *c)
{
    if (!c)
        return;
    json_decref(c->usernames);
    json_decref(c->namespaces);
    json_decref(c->runtime_classes);
    free(c);
}

int ck__psa_config_parse(const json_t *cfg, struct ck__psa_config **ret, struct ck_err *reterr)
{
    *ret = NULL;
    const char *av = json_string_value(json_object_get(cfg, "apiVersion"));
    const char *kind = json_string_value(json_object_get(cfg, "kind"));
    static const char *const versions[] = {"pod-security.admission.config.k8s.io/v1",
                                           "pod-security.admission.config.k8s.io/v1beta1",
                                           "pod-security.admission.config.k8s.io/v1alpha1"};
    bool known = false;
    for (size_t i = 0; av && i < sizeof(versions) / sizeof(versions[0]); i++)
        known |= strcmp(av, versions[i]) == 0;
    if (!json_is_object(cfg) || !kind || !*kind)
        return ck_err_set(reterr, CK_EINVAL, "Object 'Kind' is missing in the configuration");
    if (!known || strcmp(kind, "PodSecurityConfiguration") != 0)
        return ck_err_set(reterr, CK_EINVAL, "no kind \"%s\" is registered for version \"%s\"",
                          kind, av ? av : "");
    struct ck__psa_config *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_no_memory(reterr);
    struct ck_field_errors errs = {0};
    const json_t *defaults = json_object_get(cfg, "defaults");
    config_level(defaults, "enforce", &c->defaults.enforce, &errs);
    config_level(defaults, "warn", &c->defaults.warn, &errs);
    config_level(defaults, "audit", &c->defaults.audit, &errs);
    const json_t *ex = json_object_get(cfg, "exemptions");
    c->namespaces = config_exemptions(ex, "namespaces", dns_label, &errs);
    c->runtime_classes = config_exemptions(ex, "runtimeClasses", dns_subdomain, &errs);
    c->usernames = config_exemptions(ex, "usernames", NULL, &errs);
    int r = 0;
    if (errs.nomem || !c->namespaces || !c->runtime_classes || !c->usernames) {
        r = ck_err_no_memory(reterr);
    } else if (errs.len) {
        r = ck__err_aggregate(reterr, &errs);
    }
    ck_field_errors_release(&errs);
    if (r < 0) {
        ck__psa_config_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

bool ck__psa_exempt(const json_t *list, const char *name)
{
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v)
    {
        if (name && strcmp(json_string_value(v), name) == 0)
            return true;
    }
    return false;
}
