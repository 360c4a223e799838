/*
 * version.c - what this build of ckube is, shaped like Kubernetes' version.Info.
 *
 * major/minor are the Kubernetes API version ckube serves (1.32): kubectl's
 * dispatcher chooses which kubectl to run from the server's minor, so this must
 * name the API we implement, not our own release. Our release rides in
 * gitVersion's semver build metadata (v1.32.0+ckube.0.1.0), which kubectl and
 * client libraries parse as a valid version.
 *
 * CKUBE_RELEASE, CKUBE_KUBE_MAJOR/MINOR come from CMake; the commit, tree
 * state and build date from the generated version_info.h.
 */
#include <jansson.h>

#include "ckube/util.h"
#include "version_info.h"

#define STR2(x) #x
#define STR(x)  STR2(x)

#if defined(__clang__)
#define COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define COMPILER "gcc " STR(__GNUC__) "." STR(__GNUC_MINOR__) "." STR(__GNUC_PATCHLEVEL__)
#else
#define COMPILER "unknown"
#endif

#if defined(__x86_64__)
#define ARCH "amd64"
#elif defined(__aarch64__)
#define ARCH "arm64"
#elif defined(__i386__)
#define ARCH "386"
#else
#define ARCH "unknown"
#endif

static const struct ck_version_info info = {
    .major = CKUBE_KUBE_MAJOR,
    .minor = CKUBE_KUBE_MINOR,
    .git_version = "v" CKUBE_KUBE_MAJOR "." CKUBE_KUBE_MINOR ".0+ckube." CKUBE_RELEASE,
    .git_commit = CKUBE_GIT_COMMIT,
    .git_tree_state = CKUBE_GIT_TREE_STATE,
    .build_date = CKUBE_BUILD_DATE,
    .go_version = "",
    .compiler = COMPILER,
    .platform = "linux/" ARCH,
};

const struct ck_version_info *ck_version(void)
{
    return &info;
}

const char *ck_version_release(void)
{
    return CKUBE_RELEASE;
}

char *ck_version_json(bool pretty)
{
    json_t *obj =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "major", info.major, "minor",
                  info.minor, "gitVersion", info.git_version, "gitCommit", info.git_commit,
                  "gitTreeState", info.git_tree_state, "buildDate", info.build_date, "goVersion",
                  info.go_version, "compiler", info.compiler, "platform", info.platform);
    if (!obj)
        return NULL;
    char *text = json_dumps(obj, JSON_PRESERVE_ORDER | (pretty ? JSON_INDENT(2) : JSON_COMPACT));
    json_decref(obj);
    return text;
}
