/*
 * test_pod_security.c - tests for lib/apiserver/admission/pod_security_policy.c and
 * pod_security.c, the PodSecurity admission plugin.
 *
 * The checks: a table of pods, each evaluated at a level and version, against the
 * exact detail Kubernetes 1.32's policy package words (or allowed); it covers every
 * baseline and restricted check, the order of their aggregation, the overrides of
 * baseline checks at restricted, and the version gates (seccomp annotations before
 * v1.19, capabilities_restricted from v1.22, runAsUser from v1.23, Windows pods from
 * v1.25, the sysctls of v1.27/v1.29/v1.32, container_engine_t from v1.31). The labels:
 * defaults, warn following a stricter enforce, invalid values and their errors.
 * Through a real server: a pod refused in Kubernetes' words, a Deployment let through
 * with the warning header, a warn-level namespace, invalid namespace labels (422), an
 * update that only changes labels passing, and the warnings listing existing pods when
 * a namespace's enforce level is raised (and how many, when 1 s was not enough: the
 * clock is injected).
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/apiserver/admission/pod_security.h"
#include "../../lib/apiserver/internal.h"
#include "ckube/internal/util.h"
#include "httptest.h"

static json_t *load(const char *text)
{
    json_t *obj = json_loads(text, 0, NULL);
    if (!obj)
        fprintf(stderr, "bad JSON: %s\n", text);
    assert_non_null(obj);
    return obj;
}

/* ---- the checks ------------------------------------------------------------------ */

/* A restricted-compliant pod's securityContext and container securityContext. */
#define POD_OK                                                                                     \
    "\"securityContext\":{\"runAsNonRoot\":true,\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}"
#define C_OK                                                                                       \
    "\"securityContext\":{\"allowPrivilegeEscalation\":false,\"capabilities\":{\"drop\":[\"ALL\"]}}"

static const char bare_restricted[] =
    "allowPrivilegeEscalation != false (container \"c\" must set "
    "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"c\" "
    "must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or "
    "container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or "
    "container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or "
    "\"Localhost\")";

static const struct check_case {
    const char *level; /* "restricted:latest" */
    const char *pod;   /* {"metadata":...,"spec":...} */
    const char *want;  /* the detail, or NULL: allowed */
} check_cases[] = {
    /* a plain pod: fine for baseline, four reasons for restricted, in Kubernetes' order */
    {"baseline:latest", "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}", NULL},
    {"privileged:latest",
     "{\"spec\":{\"hostNetwork\":true,\"containers\":[{\"name\":\"c\",\"securityContext\":{"
     "\"privileged\":true}}]}}",
     NULL},
    {"restricted:latest", "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
     bare_restricted},
    {"restricted:latest",
     "{\"spec\":{" POD_OK ",\"containers\":[{\"name\":\"c\",\"securityContext\":{"
     "\"allowPrivilegeEscalation\":false,\"capabilities\":{\"drop\":[\"ALL\"],\"add\":[\"NET_"
     "BIND_SERVICE\"]}}}],\"volumes\":[{\"name\":\"s\",\"secret\":{\"secretName\":\"x\"}},{"
     "\"name\":\"e\",\"emptyDir\":{}}]}}",
     NULL},
    /* baseline checks come first, even at restricted */
    {"restricted:latest",
     "{\"spec\":{\"hostNetwork\":true,\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
     "host namespaces (hostNetwork=true), allowPrivilegeEscalation != false (container \"c\" "
     "must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities "
     "(container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != "
     "true (pod or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile "
     "(pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" "
     "or \"Localhost\")"},
    /* hostNamespaces */
    {"baseline:latest",
     "{\"spec\":{\"hostNetwork\":true,\"hostPID\":false,\"hostIPC\":true,\"containers\":[{"
     "\"name\":\"c\"}]}}",
     "host namespaces (hostNetwork=true, hostIPC=true)"},
    /* privileged: init containers, then containers */
    {"baseline:latest",
     "{\"spec\":{\"containers\":[{\"name\":\"c\",\"securityContext\":{\"privileged\":true}}],"
     "\"initContainers\":[{\"name\":\"i\",\"securityContext\":{\"privileged\":true}}]}}",
     "privileged (containers \"i\", \"c\" must not set securityContext.privileged=true)"},
    /* capabilities_baseline: a sorted set */
    {"baseline:latest",
     "{\"spec\":{\"containers\":[{\"name\":\"c\",\"securityContext\":{\"capabilities\":{\"add\":"
     "[\"SYS_ADMIN\",\"NET_ADMIN\",\"CHOWN\",\"SYS_ADMIN\"]}}}]}}",
     "non-default capabilities (container \"c\" must not include \"NET_ADMIN\", \"SYS_ADMIN\" in "
     "securityContext.capabilities.add)"},
    /* hostPathVolumes at baseline; restrictedVolumes replaces it at restricted */
    {"baseline:latest",
     "{\"spec\":{\"containers\":[{\"name\":\"c\"}],\"volumes\":[{\"name\":\"h\",\"hostPath\":{"
     "\"path\":\"/\"}},{\"name\":\"e\",\"emptyDir\":{}}]}}",
     "hostPath volumes (volume \"h\")"},
    {"restricted:latest",
     "{\"spec\":{" POD_OK ",\"containers\":[{\"name\":\"c\"," C_OK "}],\"volumes\":[{\"name\":"
     "\"n\",\"nfs\":{\"server\":\"s\",\"path\":\"/\"}},{\"name\":\"h\",\"hostPath\":{\"path\":"
     "\"/\"}},{\"name\":\"g\",\"gitRepo\":{\"repository\":\"r\"}},{\"name\":\"h2\",\"hostPath\":{"
     "\"path\":\"/x\"}}]}}",
     "restricted volume types (volumes \"n\", \"h\", \"g\", \"h2\" use restricted volume types "
     "\"gitRepo\", \"hostPath\", \"nfs\")"},
    {"restricted:latest",
     "{\"spec\":{" POD_OK ",\"containers\":[{\"name\":\"c\"," C_OK "}],\"volumes\":[{\"name\":"
     "\"h\",\"hostPath\":{\"path\":\"/\"}}]}}",
     "restricted volume types (volume \"h\" uses restricted volume type \"hostPath\")"},
    /* hostPorts: ports as a sorted set of strings */
    {"baseline:latest",
     "{\"spec\":{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":80,\"hostPort\":"
     "8080},{\"containerPort\":81,\"hostPort\":80}]},{\"name\":\"b\",\"ports\":[{"
     "\"containerPort\":80,\"hostPort\":8080}]},{\"name\":\"c\",\"ports\":[{\"containerPort\":"
     "80}]}]}}",
     "hostPort (containers \"a\", \"b\" use hostPorts 80, 8080)"},
    {"baseline:latest",
     "{\"spec\":{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":80,\"hostPort\":"
     "8080}]}]}}",
     "hostPort (container \"a\" uses hostPort 8080)"},
    /* appArmorProfile: the fields and the old annotations */
    {"baseline:latest",
     "{\"spec\":{\"securityContext\":{\"appArmorProfile\":{\"type\":\"Unconfined\"}},"
     "\"containers\":[{\"name\":\"c\"}]}}",
     "forbidden AppArmor profile (pod must not set AppArmor profile type to \"Unconfined\")"},
    {"baseline:latest",
     "{\"metadata\":{\"annotations\":{\"container.apparmor.security.beta.kubernetes.io/c\":"
     "\"unconfined\",\"container.apparmor.security.beta.kubernetes.io/d\":\"localhost/x\"}},"
     "\"spec\":{\"securityContext\":{\"appArmorProfile\":{\"type\":\"Unconfined\"}},"
     "\"containers\":[{\"name\":\"c\",\"securityContext\":{\"appArmorProfile\":{\"type\":"
     "\"Unconfined\"}}},{\"name\":\"d\",\"securityContext\":{\"appArmorProfile\":{\"type\":"
     "\"Localhost\",\"localhostProfile\":\"x\"}}}]}}",
     "forbidden AppArmor profiles (pod and container \"c\" and annotation must not set AppArmor "
     "profile type to \"Unconfined\", "
     "\"container.apparmor.security.beta.kubernetes.io/c=\"unconfined\"\")"},
    {"baseline:latest",
     "{\"metadata\":{\"annotations\":{"
     "\"container.apparmor.security.beta.kubernetes.io/\":\"bogus\","
     "\"container.apparmor.security.beta.kubernetes.io/a\":\"\","
     "\"container.apparmor.security.beta.kubernetes.io/b\":\"runtime/default\","
     "\"container.apparmor.security.beta.kubernetes.io/c\":\"localhost/\","
     "\"container.apparmor.security.beta.kubernetes.io/f\":\"unknown\","
     "\"container.apparmor.security.beta.kubernetes.io/e\":\"unconfined\"}},"
     "\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
     "forbidden AppArmor profiles (annotations must not set AppArmor profile type to "
     "\"container.apparmor.security.beta.kubernetes.io/=\"bogus\"\", "
     "\"container.apparmor.security.beta.kubernetes.io/e=\"unconfined\"\", "
     "\"container.apparmor.security.beta.kubernetes.io/f=\"unknown\"\")"},
    /* a volume of no type Kubernetes names (or an image volume) is "unknown" */
    {"restricted:latest",
     "{\"spec\":{" POD_OK ",\"containers\":[{\"name\":\"c\"," C_OK "}],\"volumes\":[{\"name\":"
     "\"c1\"},{\"name\":\"img\",\"image\":{\"reference\":\"x\"}},{\"name\":\"p\","
     "\"projected\":{\"sources\":[]}}]}}",
     "restricted volume types (volumes \"c1\", \"img\" use restricted volume type \"unknown\")"},
    /* seLinuxOptions, and container_engine_t from v1.31 */
    {"baseline:latest",
     "{\"spec\":{\"securityContext\":{\"seLinuxOptions\":{\"type\":\"spc_t\"}},\"containers\":[{"
     "\"name\":\"c\",\"securityContext\":{\"seLinuxOptions\":{\"user\":\"u\",\"role\":\"r\"}}}]}}",
     "seLinuxOptions (pod and container \"c\" set forbidden securityContext.seLinuxOptions: type "
     "\"spc_t\"; user may not be set; role may not be set)"},
    {"baseline:latest",
     "{\"spec\":{\"securityContext\":{\"seLinuxOptions\":{\"type\":\"container_engine_t\"}},"
     "\"containers\":[{\"name\":\"c\"}]}}",
     NULL},
    {"baseline:v1.30",
     "{\"spec\":{\"securityContext\":{\"seLinuxOptions\":{\"type\":\"container_engine_t\"}},"
     "\"containers\":[{\"name\":\"c\"}]}}",
     "seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "
     "\"container_engine_t\")"},
    /* procMount */
    {"baseline:latest",
     "{\"spec\":{\"containers\":[{\"name\":\"c\",\"securityContext\":{\"procMount\":"
     "\"Unmasked\"}},{\"name\":\"d\",\"securityContext\":{\"procMount\":\"Default\"}}]}}",
     "procMount (container \"c\" must not set securityContext.procMount to \"Unmasked\")"},
    /* seccompProfile_baseline: fields from v1.19, annotations before */
    {"baseline:latest",
     "{\"spec\":{\"securityContext\":{\"seccompProfile\":{\"type\":\"Unconfined\"}},"
     "\"containers\":[{\"name\":\"c\",\"securityContext\":{\"seccompProfile\":{\"type\":"
     "\"Unconfined\"}}}]}}",
     "seccompProfile (pod and container \"c\" must not set securityContext.seccompProfile.type to "
     "\"Unconfined\")"},
    {"baseline:v1.18",
     "{\"spec\":{\"securityContext\":{\"seccompProfile\":{\"type\":\"Unconfined\"}},"
     "\"containers\":[{\"name\":\"c\"}]}}",
     NULL},
    {"baseline:v1.18",
     "{\"metadata\":{\"annotations\":{\"seccomp.security.alpha.kubernetes.io/pod\":"
     "\"unconfined\",\"container.seccomp.security.alpha.kubernetes.io/c\":\"docker/default\"}},"
     "\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
     "seccompProfile (forbidden annotation "
     "seccomp.security.alpha.kubernetes.io/pod=\"unconfined\")"},
    {"baseline:latest",
     "{\"metadata\":{\"annotations\":{\"seccomp.security.alpha.kubernetes.io/pod\":"
     "\"unconfined\"}},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
     NULL},
    /* sysctls: the safe set grows with the version */
    {"baseline:latest",
     "{\"spec\":{\"securityContext\":{\"sysctls\":[{\"name\":\"net.ipv4.tcp_rmem\",\"value\":"
     "\"1\"},{\"name\":\"kernel.msgmax\",\"value\":\"1\"}]},\"containers\":[{\"name\":\"c\"}]}}",
     "forbidden sysctls (kernel.msgmax)"},
    {"baseline:v1.31",
     "{\"spec\":{\"securityContext\":{\"sysctls\":[{\"name\":\"net.ipv4.tcp_rmem\",\"value\":"
     "\"1\"},{\"name\":\"net.ipv4.tcp_keepalive_time\",\"value\":\"1\"}]},\"containers\":[{"
     "\"name\":\"c\"}]}}",
     "forbidden sysctls (net.ipv4.tcp_rmem)"},
    {"baseline:v1.28",
     "{\"spec\":{\"securityContext\":{\"sysctls\":[{\"name\":\"kernel.msgmax\",\"value\":\"1\"},{"
     "\"name\":\"net.ipv4.tcp_keepalive_time\",\"value\":\"1\"},{\"name\":\"net.ipv4.ip_local_"
     "reserved_ports\",\"value\":\"1\"}]},\"containers\":[{\"name\":\"c\"}]}}",
     "forbidden sysctls (kernel.msgmax, net.ipv4.tcp_keepalive_time)"},
    {"baseline:v1.26",
     "{\"spec\":{\"securityContext\":{\"sysctls\":[{\"name\":\"net.ipv4.ip_local_reserved_"
     "ports\",\"value\":\"1\"}]},\"containers\":[{\"name\":\"c\"}]}}",
     "forbidden sysctls (net.ipv4.ip_local_reserved_ports)"},
    /* windowsHostProcess */
    {"baseline:latest",
     "{\"spec\":{\"securityContext\":{\"windowsOptions\":{\"hostProcess\":true}},\"containers\":"
     "[{\"name\":\"c\",\"securityContext\":{\"windowsOptions\":{\"hostProcess\":true}}}]}}",
     "hostProcess (pod and container \"c\" must not set "
     "securityContext.windowsOptions.hostProcess=true)"},
    /* runAsNonRoot false anywhere; runAsUser 0 from v1.23 */
    {"restricted:latest",
     "{\"spec\":{" POD_OK ",\"containers\":[{\"name\":\"c\",\"securityContext\":{"
     "\"allowPrivilegeEscalation\":false,\"capabilities\":{\"drop\":[\"ALL\"]},\"runAsNonRoot\":"
     "false}}]}}",
     "runAsNonRoot != true (container \"c\" must not set securityContext.runAsNonRoot=false)"},
    {"restricted:latest",
     "{\"spec\":{\"securityContext\":{\"runAsNonRoot\":true,\"runAsUser\":0,\"seccompProfile\":{"
     "\"type\":\"Localhost\",\"localhostProfile\":\"p\"}},\"containers\":[{\"name\":\"c\"," C_OK
     "}]}}",
     "runAsUser=0 (pod must not set runAsUser=0)"},
    {"restricted:v1.22",
     "{\"spec\":{\"securityContext\":{\"runAsNonRoot\":true,\"runAsUser\":0,\"seccompProfile\":{"
     "\"type\":\"Localhost\",\"localhostProfile\":\"p\"}},\"containers\":[{\"name\":\"c\"," C_OK
     "}]}}",
     NULL},
    /* capabilities at restricted: both halves, joined with "; " */
    {"restricted:latest",
     "{\"spec\":{" POD_OK ",\"containers\":[{\"name\":\"a\",\"securityContext\":{"
     "\"allowPrivilegeEscalation\":false}},{\"name\":\"b\",\"securityContext\":{"
     "\"allowPrivilegeEscalation\":false,\"capabilities\":{\"drop\":[\"ALL\"],\"add\":[\"CHOWN\","
     "\"NET_BIND_SERVICE\"]}}}]}}",
     "unrestricted capabilities (container \"a\" must set securityContext.capabilities.drop=["
     "\"ALL\"]; container \"b\" must not include \"CHOWN\" in "
     "securityContext.capabilities.add)"},
    /* before v1.22 restricted runs the baseline capabilities check instead */
    {"restricted:v1.21", "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
     "allowPrivilegeEscalation != false (container \"c\" must set "
     "securityContext.allowPrivilegeEscalation=false), runAsNonRoot != true (pod or container "
     "\"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"c\" "
     "must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"},
    {"restricted:v1.21",
     "{\"spec\":{" POD_OK ",\"containers\":[{\"name\":\"c\",\"securityContext\":{"
     "\"allowPrivilegeEscalation\":false,\"capabilities\":{\"add\":[\"SYS_ADMIN\"]}}}]}}",
     "non-default capabilities (container \"c\" must not include \"SYS_ADMIN\" in "
     "securityContext.capabilities.add)"},
    /* before v1.19 no seccomp requirement (annotations checked), before v1.8 no escalation */
    {"restricted:v1.18", "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
     "allowPrivilegeEscalation != false (container \"c\" must set "
     "securityContext.allowPrivilegeEscalation=false), runAsNonRoot != true (pod or container "
     "\"c\" must set securityContext.runAsNonRoot=true)"},
    {"restricted:v1.7", "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
     "runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true)"},
    /* Windows pods are spared the Linux-only rules from v1.25 */
    {"restricted:latest",
     "{\"spec\":{\"os\":{\"name\":\"windows\"},\"containers\":[{\"name\":\"c\"}]}}",
     "runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true)"},
    {"restricted:v1.24",
     "{\"spec\":{\"os\":{\"name\":\"windows\"},\"containers\":[{\"name\":\"c\","
     "\"image\":\"i\"}]}}",
     bare_restricted},
    /* a version past the newest is the newest */
    {"restricted:v1.99", "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
     bare_restricted},
    /* seccomp set on the pod covers every container; an explicit bad one is named */
    {"restricted:latest",
     "{\"spec\":{" POD_OK ",\"containers\":[{\"name\":\"c\"," C_OK "},{\"name\":\"d\","
     "\"securityContext\":{\"allowPrivilegeEscalation\":false,\"capabilities\":{\"drop\":["
     "\"ALL\"]},\"seccompProfile\":{\"type\":\"Unconfined\"}}}],\"ephemeralContainers\":[{"
     "\"name\":\"e\"," C_OK "}]}}",
     "seccompProfile (container \"d\" must not set securityContext.seccompProfile.type to "
     "\"Unconfined\")"},
    /* ephemeral containers are containers too */
    {"baseline:latest",
     "{\"spec\":{\"containers\":[{\"name\":\"c\"}],\"ephemeralContainers\":[{\"name\":\"dbg\","
     "\"securityContext\":{\"privileged\":true}}]}}",
     "privileged (container \"dbg\" must not set securityContext.privileged=true)"},
};

/* Parses "level:version" as a namespace's enforce labels would give it. */
static void parse_lv(const char *text, struct ck__psa_level_version *ret)
{
    char level[32], version[32];
    assert_int_equal(sscanf(text, "%31[^:]:%31s", level, version), 2);
    char labels[256];
    snprintf(labels, sizeof(labels),
             "{\"pod-security.kubernetes.io/enforce\":\"%s\","
             "\"pod-security.kubernetes.io/enforce-version\":\"%s\"}",
             level, version);
    json_t *l = load(labels);
    struct ck__psa_policy defaults, p;
    struct ck_field_errors errs = {0};
    ck__psa_default_policy(&defaults);
    ck__psa_policy_from_labels(l, &defaults, &p, &errs);
    assert_int_equal(errs.len, 0);
    *ret = p.enforce;
    char back[64];
    ck__psa_level_version_string(ret, back, sizeof(back));
    assert_string_equal(back, text);
    json_decref(l);
}

static void test_checks_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(check_cases) / sizeof(check_cases[0]); i++) {
        const struct check_case *c = &check_cases[i];
        struct ck__psa_level_version lv;
        parse_lv(c->level, &lv);
        json_t *pod = load(c->pod);
        char *detail = NULL, *reasons = NULL;
        assert_int_equal(ck__psa_evaluate(&lv, json_object_get(pod, "metadata"),
                                          json_object_get(pod, "spec"), &reasons, &detail),
                         0);
        if (!c->want) {
            if (detail)
                fprintf(stderr, "case %zu: want allowed, got %s\n", i, detail);
            assert_null(detail);
            assert_null(reasons);
        } else {
            if (!detail || strcmp(detail, c->want) != 0)
                fprintf(stderr, "case %zu (%s):\n want %s\n got  %s\n", i, c->level, c->want,
                        detail ? detail : "(allowed)");
            assert_non_null(detail);
            assert_string_equal(detail, c->want);
            assert_non_null(reasons);
        }
        free(detail);
        free(reasons);
        json_decref(pod);
    }
}

/* The reasons alone, as the namespace warnings list them. */
static void test_reasons(void **state)
{
    (void)state;
    struct ck__psa_level_version lv;
    parse_lv("restricted:latest", &lv);
    json_t *pod = load("{\"spec\":{\"hostPID\":true,\"containers\":[{\"name\":\"c\"}]}}");
    char *detail = NULL, *reasons = NULL;
    assert_int_equal(ck__psa_evaluate(&lv, NULL, json_object_get(pod, "spec"), &reasons, &detail),
                     0);
    assert_string_equal(reasons, "host namespaces, allowPrivilegeEscalation != false, "
                                 "unrestricted capabilities, runAsNonRoot != true, "
                                 "seccompProfile");
    free(detail);
    free(reasons);
    json_decref(pod);
}

/* Running out of memory anywhere in an evaluation is CK_ENOMEM, never a shorter message. */
static void test_evaluate_alloc_fail(void **state)
{
    (void)state;
    struct ck__psa_level_version lv;
    parse_lv("restricted:latest", &lv);
    json_t *pod = load("{\"metadata\":{\"annotations\":{\"container.apparmor.security.beta."
                       "kubernetes.io/c\":\"unconfined\"}},\"spec\":{\"hostPID\":true,"
                       "\"containers\":[{\"name\":\"c\",\"ports\":[{\"hostPort\":1}],"
                       "\"securityContext\":{\"capabilities\":{\"add\":[\"SYS_ADMIN\"]}}}],"
                       "\"volumes\":[{\"name\":\"h\",\"hostPath\":{\"path\":\"/\"}}]}}");
    char *want = NULL, *want_reasons = NULL;
    assert_int_equal(ck__psa_evaluate(&lv, json_object_get(pod, "metadata"),
                                      json_object_get(pod, "spec"), &want_reasons, &want),
                     0);
    assert_non_null(want);
    int r = CK_ENOMEM;
    unsigned long n;
    for (n = 1; r == CK_ENOMEM; n++) {
        char *detail = NULL, *reasons = NULL;
        ck__alloc_fail_at(n, false);
        r = ck__psa_evaluate(&lv, json_object_get(pod, "metadata"), json_object_get(pod, "spec"),
                             &reasons, &detail);
        ck__alloc_fail_at(0, false);
        if (r == CK_ENOMEM) {
            assert_null(detail);
            assert_null(reasons);
            continue;
        }
        assert_int_equal(r, 0);
        assert_string_equal(detail, want);
        assert_string_equal(reasons, want_reasons);
        free(detail);
        free(reasons);
    }
    assert_true(n > 10); /* the evaluation did allocate, and each failure was seen */
    free(want);
    free(want_reasons);
    json_decref(pod);
}

/* The registry's order: baseline, then restricted, each sorted as Go sorts strings. */
static void test_check_order(void **state)
{
    (void)state;
    size_t n = 0;
    size_t first_restricted = 0;
    while (ck__psa_check_id(n))
        n++;
    assert_int_equal(n, 17);
    for (size_t i = 0; i < n; i++)
        if (strcmp(ck__psa_check_id(i), "allowPrivilegeEscalation") == 0)
            first_restricted = i;
    assert_int_equal(first_restricted, 11);
    for (size_t i = 1; i < n; i++)
        if (i != first_restricted)
            assert_true(strcmp(ck__psa_check_id(i - 1), ck__psa_check_id(i)) < 0);
    assert_int_equal(ck__psa_max_minor(), 32);
}

/* ---- the labels ------------------------------------------------------------------ */

static void test_labels(void **state)
{
    (void)state;
    static const struct {
        const char *labels;
        const char *enforce, *audit, *warn;
        const char *errors; /* the field errors joined with " | ", or NULL */
    } cases[] = {
        {"{}", "privileged:latest", "privileged:latest", "privileged:latest", NULL},
        {"{\"app\":\"x\"}", "privileged:latest", "privileged:latest", "privileged:latest", NULL},
        /* warn follows a stricter enforce, with its version */
        {"{\"pod-security.kubernetes.io/enforce\":\"restricted\"}", "restricted:latest",
         "privileged:latest", "restricted:latest", NULL},
        {"{\"pod-security.kubernetes.io/enforce\":\"baseline\","
         "\"pod-security.kubernetes.io/enforce-version\":\"v1.25\"}",
         "baseline:v1.25", "privileged:latest", "baseline:v1.25", NULL},
        {"{\"pod-security.kubernetes.io/enforce\":\"baseline\","
         "\"pod-security.kubernetes.io/enforce-version\":\"v1.25\","
         "\"pod-security.kubernetes.io/warn-version\":\"v1.30\"}",
         "baseline:v1.25", "privileged:latest", "baseline:v1.30", NULL},
        /* an explicit warn level stays */
        {"{\"pod-security.kubernetes.io/enforce\":\"restricted\","
         "\"pod-security.kubernetes.io/warn\":\"privileged\","
         "\"pod-security.kubernetes.io/audit\":\"baseline\","
         "\"pod-security.kubernetes.io/audit-version\":\"v1.0\"}",
         "restricted:latest", "baseline:v1.0", "privileged:latest", NULL},
        {"{\"pod-security.kubernetes.io/enforce\":\"baseline\","
         "\"pod-security.kubernetes.io/warn\":\"restricted\"}",
         "baseline:latest", "privileged:latest", "restricted:latest", NULL},
        /* a bad enforce level is restricted (and warn does not follow it) */
        {"{\"pod-security.kubernetes.io/enforce\":\"strict\"}", "restricted:latest",
         "privileged:latest", "privileged:latest",
         "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be "
         "one of privileged, baseline, restricted"},
        /* bad warn and audit levels fail open; bad versions are latest */
        {"{\"pod-security.kubernetes.io/warn\":\"\","
         "\"pod-security.kubernetes.io/audit\":\"Restricted\","
         "\"pod-security.kubernetes.io/enforce\":\"baseline\","
         "\"pod-security.kubernetes.io/enforce-version\":\"v1.025\"}",
         "baseline:latest", "privileged:latest", "privileged:latest",
         "metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: \"v1.025\": "
         "must be \"latest\" or \"v1.x\" | metadata.labels[pod-security.kubernetes.io/audit]: "
         "Invalid value: \"Restricted\": must be one of privileged, baseline, restricted | "
         "metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: \"\": must be one of "
         "privileged, baseline, restricted"},
        {"{\"pod-security.kubernetes.io/enforce\":\"baseline\","
         "\"pod-security.kubernetes.io/enforce-version\":\"v2.0\"}",
         "baseline:latest", "privileged:latest", "baseline:latest",
         "metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: \"v2.0\": "
         "must be \"latest\" or \"v1.x\""},
        {"{\"pod-security.kubernetes.io/enforce\":\"baseline\","
         "\"pod-security.kubernetes.io/enforce-version\":\"v1.99999999999999999999\"}",
         "baseline:latest", "privileged:latest", "baseline:latest",
         "metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "
         "\"v1.99999999999999999999\": must be \"latest\" or \"v1.x\""},
        {"{\"pod-security.kubernetes.io/enforce\":\"baseline\","
         "\"pod-security.kubernetes.io/enforce-version\":\"v1.0\"}",
         "baseline:v1.0", "privileged:latest", "baseline:v1.0", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *labels = load(cases[i].labels);
        struct ck__psa_policy defaults, p;
        struct ck_field_errors errs = {0};
        ck__psa_default_policy(&defaults);
        ck__psa_policy_from_labels(labels, &defaults, &p, &errs);
        char e[64], a[64], w[64];
        ck__psa_level_version_string(&p.enforce, e, sizeof(e));
        ck__psa_level_version_string(&p.audit, a, sizeof(a));
        ck__psa_level_version_string(&p.warn, w, sizeof(w));
        assert_string_equal(e, cases[i].enforce);
        assert_string_equal(a, cases[i].audit);
        assert_string_equal(w, cases[i].warn);
        char joined[1024] = "";
        for (size_t k = 0; k < errs.len; k++) {
            char *text = ck_field_error_string(&errs.items[k]);
            assert_non_null(text);
            snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s",
                     k ? " | " : "", text);
            free(text);
        }
        assert_string_equal(joined, cases[i].errors ? cases[i].errors : "");
        ck_field_errors_release(&errs);
        json_decref(labels);
    }
}

/* ---- through a server ------------------------------------------------------------ */

static json_t *body_json(const struct response *r)
{
    json_t *j = json_loadb(r->body, r->len, 0, NULL);
    assert_non_null(j);
    return j;
}

static const char *message(const json_t *status)
{
    return json_string_value(json_object_get(status, "message"));
}

/* How many Warning headers r has; *ret_first gets the first one's value (caller frees). */
static size_t warnings(const struct response *r, char **ret_first)
{
    size_t n = 0;
    if (ret_first)
        *ret_first = NULL;
    for (const char *p = r->headers; p && (p = strstr(p, "\nWarning: ")); p++) {
        const char *v = p + strlen("\nWarning: ");
        size_t len = strcspn(v, "\r\n");
        if (n == 0 && ret_first)
            *ret_first = strndup(v, len);
        n++;
    }
    return n;
}

/* Whether some Warning header of r is exactly value. */
static bool has_warning(const struct response *r, const char *value)
{
    size_t len = strlen(value);
    for (const char *p = r->headers; p && (p = strstr(p, "\nWarning: ")); p++) {
        const char *v = p + strlen("\nWarning: ");
        if (strncmp(v, value, len) == 0 && (v[len] == '\r' || v[len] == '\n'))
            return true;
    }
    return false;
}

static void create_namespace(struct ck_apiserver *server, const char *name, const char *labels)
{
    char body[512];
    snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\",\"labels\":%s}}", name, labels);
    struct response r;
    http_call(server, "POST", "/api/v1/namespaces", body, NULL, &r);
    assert_int_equal(r.status, 201);
    response_release(&r);
}

#define BARE_POD(name)                                                                             \
    "{\"metadata\":{\"name\":\"" name "\"},\"spec\":{\"containers\":[{\"name\":\"c\","             \
    "\"image\":\"busybox\"}]}}"

static void test_server_enforce_and_warn(void **state)
{
    struct ck_apiserver *server = served(state);
    create_namespace(server, "r", "{\"pod-security.kubernetes.io/enforce\":\"restricted\"}");
    struct response r;

    /* enforce: refused in Kubernetes' words, nothing stored */
    http_call(server, "POST", "/api/v1/namespaces/r/pods", BARE_POD("p"), NULL, &r);
    assert_int_equal(r.status, 403);
    json_t *status = body_json(&r);
    char want[2048];
    snprintf(want, sizeof(want),
             "pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": %s",
             bare_restricted);
    assert_string_equal(message(status), want);
    assert_string_equal(json_string_value(json_object_get(status, "reason")), "Forbidden");
    json_decref(status);
    response_release(&r);
    http_call(server, "GET", "/api/v1/namespaces/r/pods/p", NULL, NULL, &r);
    assert_int_equal(r.status, 404);
    response_release(&r);

    /* a compliant pod passes without a warning */
    http_call(server, "POST", "/api/v1/namespaces/r/pods",
              "{\"metadata\":{\"name\":\"ok\"},\"spec\":{" POD_OK ",\"containers\":[{\"name\":"
              "\"c\",\"image\":\"busybox\"," C_OK "}]}}",
              NULL, &r);
    assert_int_equal(r.status, 201);
    assert_int_equal(warnings(&r, NULL), 0);
    response_release(&r);

    /* a controller's template is warned about (warn follows enforce), never refused */
    http_call(server, "POST", "/apis/apps/v1/namespaces/r/deployments",
              "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"selector\":{\"matchLabels\":{\"a\":\"b\"}"
              "},\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":[{"
              "\"name\":\"c\",\"image\":\"busybox\"}]}}}}",
              NULL, &r);
    assert_int_equal(r.status, 201);
    char *first = NULL;
    assert_int_equal(warnings(&r, &first), 1);
    char header[2048];
    snprintf(header, sizeof(header), "would violate PodSecurity \"restricted:latest\": %s",
             bare_restricted);
    /* the header quotes the text, escaping its quotes */
    struct ck__buf b = {0};
    ck__buf_adds(&b, "299 - \"");
    for (const char *c = header; *c; c++)
        ck__buf_printf(&b, "%s%c", *c == '"' ? "\\" : "", *c);
    ck__buf_adds(&b, "\"");
    char *quoted = ck__buf_take(&b);
    assert_string_equal(first, quoted);
    free(first);
    response_release(&r);

    /* a CronJob's template is deeper; a dry run warns too */
    http_call(server, "POST", "/apis/batch/v1/namespaces/r/cronjobs?dryRun=All",
              "{\"metadata\":{\"name\":\"cj\"},\"spec\":{\"schedule\":\"* * * * *\","
              "\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":\"Never\","
              "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}}}}",
              NULL, &r);
    assert_int_equal(r.status, 201);
    assert_true(has_warning(&r, quoted));
    response_release(&r);
    free(quoted);

    /* a warning past 4096 characters is cut to 256, as Kubernetes' recorder cuts it */
    struct ck__buf dep = {0}, text = {0};
    ck__buf_adds(&dep, "{\"metadata\":{\"name\":\"many\"},\"spec\":{\"selector\":{"
                       "\"matchLabels\":{\"a\":\"b\"}},\"template\":{\"metadata\":{"
                       "\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":[");
    ck__buf_adds(&text, "would violate PodSecurity \"restricted:latest\": allowPrivilegeEscalation "
                        "!= false (containers ");
    for (int i = 0; i < 100; i++) {
        ck__buf_printf(&dep, "%s{\"name\":\"container-number-%02d\",\"image\":\"busybox\"}",
                       i ? "," : "", i);
        ck__buf_printf(&text, "%s\"container-number-%02d\"", i ? ", " : "", i);
    }
    ck__buf_adds(&dep, "]}}}}");
    char *many = ck__buf_take(&dep), *full = ck__buf_take(&text);
    assert_true(strlen(full) > 256);
    full[256] = '\0'; /* ASCII: 256 characters */
    for (const char *c = full; *c; c++)
        ck__buf_printf(&b, "%s%c", *c == '"' ? "\\" : "", *c);
    char *cut = ck__buf_take(&b);
    char want_cut[1024];
    snprintf(want_cut, sizeof(want_cut), "299 - \"%s\"", cut);
    http_call(server, "POST", "/apis/apps/v1/namespaces/r/deployments", many, NULL, &r);
    assert_int_equal(r.status, 201);
    assert_int_equal(warnings(&r, NULL), 1);
    assert_true(has_warning(&r, want_cut));
    response_release(&r);
    free(many);
    free(full);
    free(cut);

    /* warn only: let through with the warning */
    create_namespace(server, "w", "{\"pod-security.kubernetes.io/warn\":\"baseline\"}");
    http_call(server, "POST", "/api/v1/namespaces/w/pods",
              "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"hostNetwork\":true,\"containers\":[{"
              "\"name\":\"c\",\"image\":\"busybox\"}]}}",
              NULL, &r);
    assert_int_equal(r.status, 201);
    assert_true(has_warning(&r, "299 - \"would violate PodSecurity \\\"baseline:latest\\\": host "
                                "namespaces (hostNetwork=true)\""));
    response_release(&r);

    /* no labels: privileged, no warning */
    http_call(server, "POST", "/api/v1/namespaces/default/pods", BARE_POD("p"), NULL, &r);
    assert_int_equal(r.status, 201);
    assert_int_equal(warnings(&r, NULL), 0);
    response_release(&r);
}

static void test_server_namespace_labels(void **state)
{
    struct ck_apiserver *server = served(state);
    struct response r;
    http_call(server, "POST", "/api/v1/namespaces",
              "{\"metadata\":{\"name\":\"bad\",\"labels\":{\"pod-security.kubernetes.io/"
              "enforce\":\"strict\"}}}",
              NULL, &r);
    assert_int_equal(r.status, 422);
    json_t *status = body_json(&r);
    assert_string_equal(message(status),
                        "Namespace \"bad\" is invalid: "
                        "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "
                        "\"strict\": must be one of privileged, baseline, restricted");
    json_decref(status);
    response_release(&r);

    /* pods made while the namespace is privileged */
    create_namespace(server, "e", "{}");
    static const char *const pods[] = {BARE_POD("b"), BARE_POD("a"), BARE_POD("z")};
    for (size_t i = 0; i < 3; i++) {
        http_call(server, "POST", "/api/v1/namespaces/e/pods", pods[i], NULL, &r);
        assert_int_equal(r.status, 201);
        response_release(&r);
    }
    http_call(server, "POST", "/api/v1/namespaces/e/pods",
              "{\"metadata\":{\"name\":\"host\"},\"spec\":{\"hostPID\":true,\"containers\":[{"
              "\"name\":\"c\",\"image\":\"busybox\"}]}}",
              NULL, &r);
    assert_int_equal(r.status, 201);
    response_release(&r);

    /* raising enforce lists the pods that violate it, grouped by their reasons */
    static const char *const merge[] = {"Content-Type: application/merge-patch+json", NULL};
    http_call(server, "PATCH", "/api/v1/namespaces/e",
              "{\"metadata\":{\"labels\":{\"pod-security.kubernetes.io/enforce\":\"restricted\"}}}",
              merge, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(warnings(&r, NULL), 3);
    assert_true(has_warning(&r, "299 - \"existing pods in namespace \\\"e\\\" violate the new "
                                "PodSecurity enforce level \\\"restricted:latest\\\"\""));
    assert_true(has_warning(&r, "299 - \"a (and 2 other pods): allowPrivilegeEscalation != false, "
                                "unrestricted capabilities, runAsNonRoot != true, "
                                "seccompProfile\""));
    assert_true(has_warning(&r, "299 - \"host: host namespaces, allowPrivilegeEscalation != "
                                "false, unrestricted capabilities, runAsNonRoot != true, "
                                "seccompProfile\""));
    response_release(&r);

    /* relaxing it, or keeping it, checks nothing */
    http_call(server, "PATCH", "/api/v1/namespaces/e",
              "{\"metadata\":{\"labels\":{\"pod-security.kubernetes.io/enforce\":\"baseline\"}}}",
              merge, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(warnings(&r, NULL), 0);
    response_release(&r);

    /* an update of a pod that changes no image is not evaluated; a new image is */
    http_call(server, "PATCH", "/api/v1/namespaces/e/pods/host",
              "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}", merge, &r);
    assert_int_equal(r.status, 200);
    response_release(&r);
    static const char *const json_patch[] = {"Content-Type: application/json-patch+json", NULL};
    http_call(server, "PATCH", "/api/v1/namespaces/e/pods/host",
              "[{\"op\":\"replace\",\"path\":\"/spec/containers/0/image\",\"value\":"
              "\"busybox:2\"}]",
              json_patch, &r);
    assert_int_equal(r.status, 403);
    status = body_json(&r);
    assert_string_equal(message(status), "pods \"host\" is forbidden: violates PodSecurity "
                                         "\"baseline:latest\": host namespaces (hostPID=true)");
    json_decref(status);
    response_release(&r);

    /* invalid labels on an update are refused unless they were already there */
    http_call(server, "PATCH", "/api/v1/namespaces/e",
              "{\"metadata\":{\"labels\":{\"pod-security.kubernetes.io/warn-version\":\"1.30\"}}}",
              merge, &r);
    assert_int_equal(r.status, 422);
    response_release(&r);
}

/* A clock that moves 300 ms at each reading. */
static long long fake_ns;
static long long slow_clock(void)
{
    fake_ns += 300000000LL;
    return fake_ns;
}

/* The existing pods are checked for 1 s at most: then a warning says how many were. */
static void test_server_namespace_check_time_limit(void **state)
{
    struct ck_apiserver *server = served(state);
    struct response r;
    create_namespace(server, "slow", "{}");
    static const char *const pods[] = {BARE_POD("p1"), BARE_POD("p2"), BARE_POD("p3"),
                                       BARE_POD("p4"), BARE_POD("p5"), BARE_POD("p6")};
    for (size_t i = 0; i < 6; i++) {
        http_call(server, "POST", "/api/v1/namespaces/slow/pods", pods[i], NULL, &r);
        assert_int_equal(r.status, 201);
        response_release(&r);
    }
    /* readings: the deadline (0.3 s + 1 s), then after each pod 0.6, 0.9, 1.2, 1.5 s */
    fake_ns = 0;
    ck__psa_set_clock(slow_clock);
    static const char *const merge[] = {"Content-Type: application/merge-patch+json", NULL};
    http_call(server, "PATCH", "/api/v1/namespaces/slow",
              "{\"metadata\":{\"labels\":{\"pod-security.kubernetes.io/enforce\":\"baseline\","
              "\"pod-security.kubernetes.io/enforce-version\":\"v1.0\"}}}",
              merge, &r);
    ck__psa_set_clock(NULL);
    assert_int_equal(r.status, 200);
    /* baseline: nothing to say of the pods but how many were looked at */
    assert_int_equal(warnings(&r, NULL), 1);
    assert_true(has_warning(&r, "299 - \"new PodSecurity enforce level only checked against the "
                                "first 4 of 6 existing pods\""));
    response_release(&r);
    fake_ns = 0;
    ck__psa_set_clock(slow_clock);
    http_call(server, "PATCH", "/api/v1/namespaces/slow",
              "{\"metadata\":{\"labels\":{\"pod-security.kubernetes.io/enforce\":"
              "\"restricted\"}}}",
              merge, &r);
    ck__psa_set_clock(NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal(warnings(&r, NULL), 3);
    assert_true(has_warning(&r, "299 - \"new PodSecurity enforce level only checked against the "
                                "first 4 of 6 existing pods\""));
    /* the version label stayed: restricted at v1.0 asks only for runAsNonRoot */
    assert_true(has_warning(&r, "299 - \"existing pods in namespace \\\"slow\\\" violate the new "
                                "PodSecurity enforce level \\\"restricted:v1.0\\\"\""));
    assert_true(has_warning(&r, "299 - \"p1 (and 3 other pods): runAsNonRoot != true\""));
    response_release(&r);
}

/* Writes text to dir/name. */
static void write_in(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_int_equal(ck__write_file_atomic(path, text, strlen(text), 0600), 0);
}

/* Configures a default chain from dir/name: 0 with *ret (free it), or the error's code
 * with its words in why. */
static int configure(const char *dir, const char *name, struct ck__admission_chain **ret, char *why,
                     size_t size)
{
    struct ck_err err = {0};
    assert_int_equal(ck__admission_chain_new(NULL, NULL, ret, &err), 0);
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int r = ck__admission_chain_configure(*ret, path, &err);
    snprintf(why, size, "%s", r < 0 ? ck_err_message(&err) : "");
    ck_err_release(&err);
    return r;
}

/* --admission-control-config-file: PodSecurity's configuration inline or by path. */
static void test_admission_configuration(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-admcfg-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char why[1024];
    struct ck__admission_chain *c = NULL;

    /* inline, in JSON: defaults and exemptions */
    write_in(dir, "inline.json",
             "{\"apiVersion\":\"apiserver.config.k8s.io/v1\",\"kind\":\"AdmissionConfiguration\","
             "\"plugins\":[{\"name\":\"PodSecurity\",\"configuration\":{\"apiVersion\":"
             "\"pod-security.admission.config.k8s.io/v1\",\"kind\":\"PodSecurityConfiguration\","
             "\"defaults\":{\"enforce\":\"baseline\",\"enforce-version\":\"v1.30\",\"warn\":"
             "\"restricted\"},\"exemptions\":{\"usernames\":[\"ci\"],\"namespaces\":"
             "[\"kube-system\"],\"runtimeClasses\":[\"kata\"]}}}]}");
    assert_int_equal(configure(dir, "inline.json", &c, why, sizeof(why)), 0);
    assert_non_null(c->pod_security);
    const struct ck__psa_policy *d = &c->pod_security->defaults;
    assert_int_equal(d->enforce.level, CK__PSA_BASELINE);
    assert_false(d->enforce.latest);
    assert_int_equal(d->enforce.minor, 30);
    assert_int_equal(d->warn.level, CK__PSA_RESTRICTED);
    assert_true(d->warn.latest);
    assert_int_equal(d->audit.level, CK__PSA_PRIVILEGED);
    assert_true(ck__psa_exempt(c->pod_security->usernames, "ci"));
    assert_false(ck__psa_exempt(c->pod_security->usernames, "cj"));
    assert_true(ck__psa_exempt(c->pod_security->namespaces, "kube-system"));
    assert_true(ck__psa_exempt(c->pod_security->runtime_classes, "kata"));
    ck__admission_chain_free(c);

    /* by path, relative to the configuration's directory, in YAML */
    write_in(dir, "psa.yaml",
             "apiVersion: pod-security.admission.config.k8s.io/v1\n"
             "kind: PodSecurityConfiguration\ndefaults:\n  enforce: restricted\n");
    write_in(dir, "bypath.yaml",
             "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n"
             "plugins:\n- name: ResourceQuota\n  configuration:\n"
             "    apiVersion: resourcequota.admission.k8s.io/v1\n    kind: Configuration\n"
             "    limitedResources:\n    - resource: pods\n      matchContains: [pods]\n"
             "      matchScopes:\n      - scopeName: PriorityClass\n        operator: In\n"
             "        values: [cluster-services]\n"
             "- name: AlwaysPullImages\n  path: nowhere.yaml\n"
             "- name: PodSecurity\n  path: psa.yaml\n");
    assert_int_equal(configure(dir, "bypath.yaml", &c, why, sizeof(why)), 0);
    assert_int_equal(c->pod_security->defaults.enforce.level, CK__PSA_RESTRICTED);
    assert_int_equal(json_array_size(c->quota_limited), 1);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(c->quota_limited, 0), "resource")),
        "pods");
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(json_object_get(json_array_get(c->quota_limited, 0), "matchScopes"), 0),
            "scopeName")),
        "PriorityClass");
    ck__admission_chain_free(c);
    /* ResourceQuota's configuration is validated too */
    write_in(dir, "quota.yaml",
             "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n"
             "plugins:\n- name: ResourceQuota\n  configuration:\n"
             "    apiVersion: resourcequota.admission.k8s.io/v1\n    kind: Configuration\n"
             "    limitedResources:\n    - matchContains: [pods]\n");
    assert_int_equal(configure(dir, "quota.yaml", &c, why, sizeof(why)), CK_EINVAL);
    assert_string_equal(why, "couldn't init admission plugin \"ResourceQuota\": "
                             "limitedResources[0].resource: Required value");
    ck__admission_chain_free(c);

    /* the webhook plugins' kubeConfigFile: absolute, its users' relative paths resolved */
    char body[1024];
    snprintf(body, sizeof(body),
             "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n"
             "plugins:\n- name: ValidatingAdmissionWebhook\n  configuration:\n"
             "    apiVersion: apiserver.config.k8s.io/v1\n"
             "    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: %s/hooks.kubeconfig\n"
             "- name: MutatingAdmissionWebhook\n  configuration:\n"
             "    apiVersion: apiserver.config.k8s.io/v1alpha1\n    kind: WebhookAdmission\n"
             "    kubeConfigFile: %s/hooks.kubeconfig\n",
             dir, dir);
    write_in(dir, "hooks.yaml", body);
    write_in(dir, "hooks.kubeconfig",
             "users:\n- name: '*'\n  user: {tokenFile: t, client-certificate: /abs.crt}\n");
    assert_int_equal(configure(dir, "hooks.yaml", &c, why, sizeof(why)), 0);
    for (int k = 0; k < 2; k++) {
        const json_t *user = json_object_get(
            json_array_get(json_object_get(c->webhook_kubeconfig[k], "users"), 0), "user");
        char want[512];
        snprintf(want, sizeof(want), "%s/t", dir);
        assert_string_equal(json_string_value(json_object_get(user, "tokenFile")), want);
        assert_string_equal(json_string_value(json_object_get(user, "client-certificate")),
                            "/abs.crt");
    }
    ck__admission_chain_free(c);
    write_in(dir, "hooks.yaml",
             "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n"
             "plugins:\n- name: ValidatingAdmissionWebhook\n  configuration:\n"
             "    apiVersion: apiserver.config.k8s.io/v1\n"
             "    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: hooks.kubeconfig\n");
    assert_int_equal(configure(dir, "hooks.yaml", &c, why, sizeof(why)), CK_EINVAL);
    assert_string_equal(why, "couldn't init admission plugin \"ValidatingAdmissionWebhook\": "
                             "kubeConfigFile: Invalid value: \"hooks.kubeconfig\": must be an "
                             "absolute file path");
    ck__admission_chain_free(c);

    /* a disabled plugin's configuration is not read */
    struct ck_err err = {0};
    assert_int_equal(ck__admission_chain_new(NULL, "PodSecurity", &c, &err), 0);
    char path[512];
    snprintf(path, sizeof(path), "%s/bypath.yaml", dir);
    write_in(dir, "psa.yaml", "kind: Nonsense\n");
    assert_int_equal(ck__admission_chain_configure(c, path, &err), 0);
    assert_null(c->pod_security);
    ck__admission_chain_free(c);

    /* errors, in Kubernetes' words */
    static const struct {
        const char *psa, *want;
    } bad[] = {
        {"kind: Nonsense\n", "couldn't init admission plugin \"PodSecurity\": no kind "
                             "\"Nonsense\" is registered for version \"\""},
        {"apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\n"
         "defaults: {enforce: strict, warn-version: v2.0}\n"
         "exemptions: {namespaces: [Bad_NS, ok, ok], usernames: [\"\"]}\n",
         "couldn't init admission plugin \"PodSecurity\": [defaults.enforce: Invalid value: "
         "\"strict\": must be one of privileged, baseline, restricted, "
         "defaults.warn-version: Invalid value: \"v2.0\": must be \"latest\" or \"v1.x\", "
         "exemptions.namespaces[0]: Invalid value: \"Bad_NS\": a lowercase RFC 1123 label"},
        {"apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\n"
         "exemptions: {namespaces: [ok, ok], usernames: [\"\"]}\n",
         "couldn't init admission plugin \"PodSecurity\": [exemptions.namespaces[1]: Duplicate "
         "value: \"ok\", exemptions.usernames[0]: Required value]"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_in(dir, "psa.yaml", bad[i].psa);
        assert_int_equal(configure(dir, "bypath.yaml", &c, why, sizeof(why)), CK_EINVAL);
        if (strncmp(why, bad[i].want, strlen(bad[i].want)) != 0)
            fail_msg("got %s\nwant %s", why, bad[i].want);
        ck__admission_chain_free(c);
    }
    assert_int_equal(configure(dir, "missing.yaml", &c, why, sizeof(why)), CK_EINVAL);
    assert_non_null(strstr(why, "unable to read admission control configuration from \""));
    assert_non_null(strstr(why, "missing.yaml: no such file or directory]"));
    ck__admission_chain_free(c);
    write_in(dir, "wrong.yaml", "apiVersion: v1\nkind: ConfigMap\n");
    assert_int_equal(configure(dir, "wrong.yaml", &c, why, sizeof(why)), CK_EINVAL);
    assert_non_null(strstr(why, "no kind \"ConfigMap\" is registered for version \"v1\""));
    ck__admission_chain_free(c);
    write_in(dir, "bypath.yaml",
             "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n"
             "plugins:\n- name: PodSecurity\n  path: gone.yaml\n");
    assert_int_equal(configure(dir, "bypath.yaml", &c, why, sizeof(why)), CK_EINVAL);
    assert_non_null(strstr(why, "Couldn't open admission plugin configuration "));
    ck__admission_chain_free(c);

    static const char *const files[] = {"inline.json", "psa.yaml", "bypath.yaml", "wrong.yaml",
                                        "quota.yaml"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checks_table),
        cmocka_unit_test(test_reasons),
        cmocka_unit_test(test_evaluate_alloc_fail),
        cmocka_unit_test(test_check_order),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_admission_configuration),
        cmocka_unit_test_setup_teardown(test_server_enforce_and_warn, test_serve, test_unserve),
        cmocka_unit_test_setup_teardown(test_server_namespace_labels, test_serve, test_unserve),
        cmocka_unit_test_setup_teardown(test_server_namespace_check_time_limit, test_serve,
                                        test_unserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
