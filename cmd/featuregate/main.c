/*
 * featuregate - works on feature lists in Kubernetes' versioned_feature_list
 * format: eval (effective values, rules P1-P10), list (the docs table),
 * lint (lifecycle rules, removals against a previous list), gen-c (C
 * handles for a list, used by the build) and upgrade-check (what settings
 * will stop a component, and what changes, between two versions).
 *
 * Thin: flags, wiring and exit codes. Exit 0 on success; 1 on any error,
 * usage errors included, with one line on stderr and nothing on stdout.
 * upgrade-check differs, as a pre-upgrade gate in scripts needs: 0 nothing
 * blocks, 1 something blocks, 2 bad usage or unreadable input.
 */
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckube/featuregate.h"

#define DEFAULT_BINARY_VERSION "1.34"
#define MAX_FLAGS              64

static const char usage_text[] =
    "Usage:\n"
    "  featuregate eval --features LIST.yaml [--binary-version X.Y] [--emulated-version X.Y]\n"
    "                   [--feature-gates 'A=true,B=false']... [--config CONFIG.yaml] [--env]\n"
    "  featuregate list --features LIST.yaml [-o table|json|markdown]\n"
    "  featuregate lint --features LIST.yaml [--previous OLD.yaml [--binary-version X.Y]]\n"
    "  featuregate gen-c --features LIST.yaml --header OUT.h --source OUT.c\n"
    "  featuregate upgrade-check --from X.Y --to X.Y [--previous OLD.yaml] [--features NEW.yaml]\n"
    "                   [--feature-gates 'A=true,B=false']... [--config CONFIG.yaml]... "
    "[-o text|json]\n"
    "\n"
    "eval prints a JSON object of every gate known at the effective version and its value.\n"
    "Precedence: defaults < environment (--env) < config file < --feature-gates.\n"
    "The default binary version is " DEFAULT_BINARY_VERSION ".\n"
    "upgrade-check reads the shipped Kubernetes list of --from and --to unless given;\n"
    "exit 0: nothing blocks, 1: a setting will stop the component, 2: bad usage or input.\n";

/* Like every other error: one line on stderr, exit code 1. */
static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "featuregate: %s%s (see featuregate --help)\n", what, arg);
    return 1;
}

static int fail(const char *msg)
{
    fprintf(stderr, "featuregate: %s\n", msg);
    return 1;
}

static void log_to_stderr(void *ud, int v, const char *msg)
{
    (void)ud;
    if (v == 0)
        fprintf(stderr, "%s\n", msg);
}

struct opts {
    const char *features, *binary, *emulated, *config, *output, *header, *source, *previous;
    const char *from, *to;
    const char *flags[MAX_FLAGS];
    size_t nflags;
    struct ck_fg_upgrade_source src[MAX_FLAGS]; /* flags and configs in command-line order */
    size_t nsrc;
    bool env;
};

static int parse_opts(int argc, char **argv, struct opts *o, bool need_features)
{
    static const struct option lo[] = {
        {"features", required_argument, NULL, 'f'},
        {"binary-version", required_argument, NULL, 'b'},
        {"emulated-version", required_argument, NULL, 'e'},
        {"feature-gates", required_argument, NULL, 'g'},
        {"config", required_argument, NULL, 'c'},
        {"env", no_argument, NULL, 'E'},
        {"output", required_argument, NULL, 'o'},
        {"header", required_argument, NULL, 'H'},
        {"source", required_argument, NULL, 'S'},
        {"previous", required_argument, NULL, 'P'},
        {"from", required_argument, NULL, 'F'},
        {"to", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":o:h", lo, NULL)) != -1) {
        switch (c) {
        case 'f':
            o->features = optarg;
            break;
        case 'b':
            o->binary = optarg;
            break;
        case 'e':
            o->emulated = optarg;
            break;
        case 'g':
        case 'c':
            if (o->nsrc == MAX_FLAGS)
                return usage_error("too many --feature-gates or --config flags", "");
            o->src[o->nsrc++] = (struct ck_fg_upgrade_source){c == 'c', optarg};
            if (c == 'c')
                o->config = optarg;
            else
                o->flags[o->nflags++] = optarg;
            break;
        case 'F':
            o->from = optarg;
            break;
        case 'T':
            o->to = optarg;
            break;
        case 'E':
            o->env = true;
            break;
        case 'o':
            o->output = optarg;
            break;
        case 'H':
            o->header = optarg;
            break;
        case 'S':
            o->source = optarg;
            break;
        case 'P':
            o->previous = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            exit(0);
        case ':':
            return usage_error("flag needs an argument: ", argv[optind - 1]);
        default:
            return usage_error("unknown flag: ", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument: ", argv[optind]);
    if (!o->features && need_features)
        return usage_error("--features is required", "");
    return 0;
}

static int binary_version(const struct opts *o, struct ck_fg_version *ret);

/* Builds the gate for eval: binary, emulation window, list, sources. */
static int cmd_eval(const struct opts *o)
{
    struct ck_fg_err err = {0};
    struct ck_fg_version bin, emu, minc;
    int rc = 1;

    if (binary_version(o, &bin))
        return 1;
    emu = bin;
    minc = ck_fg_version_sub_minor(bin, 1); /* V8: unclamped without emulation */
    if (o->emulated) {
        if (ck_fg_emulated_version_parse(o->emulated, &emu, &err) < 0 ||
            ck_fg_window_check(bin, emu, NULL, &minc, &err) < 0)
            return fail(err.msg);
    }
    struct ck_fg_gate *g = ck_fg_gate_new(emu);
    if (!g)
        return fail("out of memory");
    ck_fg_set_logger(g, log_to_stderr, NULL);
    if (ck_fg_set_versions(g, emu, minc, &err) < 0 || ck_fg_list_load(g, o->features, &err) < 0 ||
        ck_fg_apply_sources(g, o->flags, o->nflags, o->config, o->env, &err) < 0) {
        rc = fail(err.msg);
        goto out;
    }
    ck_fg_warn_emulated_alpha(g, bin); /* V10, on stderr */
    char *json = ck_fg_all_json(g);
    if (!json) {
        rc = fail("out of memory");
        goto out;
    }
    printf("%s\n", json);
    free(json);
    rc = 0;
out:
    ck_fg_gate_free(g);
    return rc;
}

static int cmd_list(const struct opts *o)
{
    struct ck_fg_err err = {0};
    enum ck_fg_table_format fmt = CK_FG_TABLE_TEXT;
    if (o->output && !strcmp(o->output, "json"))
        fmt = CK_FG_TABLE_JSON;
    else if (o->output && !strcmp(o->output, "markdown"))
        fmt = CK_FG_TABLE_MARKDOWN;
    else if (o->output && strcmp(o->output, "table"))
        return usage_error("unknown output format (want table, json or markdown): ", o->output);
    struct ck_fg_gate *g = ck_fg_gate_new(ck_fg_version_mm(0, 0));
    if (!g)
        return fail("out of memory");
    int rc = 1;
    if (ck_fg_list_load(g, o->features, &err) < 0) {
        rc = fail(err.msg);
    } else {
        char *t = ck_fg_docs_table(g, fmt);
        if (t) {
            fputs(t, stdout);
            if (fmt == CK_FG_TABLE_JSON)
                fputc('\n', stdout);
            rc = 0;
        } else {
            rc = fail("out of memory");
        }
        free(t);
    }
    ck_fg_gate_free(g);
    return rc;
}

static void print_finding(void *ud, const char *line)
{
    (void)ud;
    printf("%s\n", line);
}

/* The binary version: --binary-version or the default, patch ignored (P1). */
static int binary_version(const struct opts *o, struct ck_fg_version *ret)
{
    struct ck_fg_err err = {0};
    if (ck_fg_version_parse(o->binary ? o->binary : DEFAULT_BINARY_VERSION, ret, &err) < 0) {
        char m[600];
        snprintf(m, sizeof(m), "invalid --binary-version: %s", err.msg);
        return fail(m);
    }
    *ret = ck_fg_version_mm(ret->major, ret->minor);
    return 0;
}

/* lint: the list's own rules; with --previous also the removal rules (L3). */
static int cmd_lint(const struct opts *o)
{
    struct ck_fg_err err = {0};
    struct ck_fg_version bin;
    int n = ck_fg_list_lint(o->features, print_finding, NULL, &err);
    if (n < 0)
        return fail(err.msg);
    if (o->previous) {
        if (binary_version(o, &bin))
            return 1;
        int r = ck_fg_list_lint_removals(o->previous, o->features, bin, print_finding, NULL, &err);
        if (r < 0)
            return fail(err.msg);
        n += r;
    }
    return n > 0 ? 1 : 0;
}

static int write_or_fail(FILE *f, const char *path)
{
    if (fclose(f) != 0) {
        fprintf(stderr, "featuregate: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

/* gen-c: CK_FEATURE_<Name> handles and a registration function for a list. */
static int cmd_gen_c(const struct opts *o)
{
    struct ck_fg_err err = {0};
    char v[32], m[32];
    if (!o->header || !o->source)
        return usage_error("gen-c needs --header and --source", "");
    struct ck_fg_gate *g = ck_fg_gate_new(ck_fg_version_mm(0, 0));
    if (!g)
        return fail("out of memory");
    if (ck_fg_list_load(g, o->features, &err) < 0) {
        ck_fg_gate_free(g);
        return fail(err.msg);
    }
    FILE *h = fopen(o->header, "w"), *c = fopen(o->source, "w");
    if (!h || !c) {
        if (h)
            fclose(h);
        if (c)
            fclose(c);
        ck_fg_gate_free(g);
        return fail("cannot open the output files");
    }
    size_t n = ck_fg_count(g);
    fprintf(h,
            "/* Generated by `featuregate gen-c` from features/ckube-features.yaml. Do not "
            "edit. */\n#ifndef CKUBE_FEATURES_H\n#define CKUBE_FEATURES_H\n\n"
            "#include \"ckube/featuregate.h\"\n\n"
            "/* Handles filled in by ck_features_register(). */\n"
            "extern ck_fg_feature_t ck_feature_handles[%zu];\n\n",
            n - 2 ? n - 2 : 1);
    for (ck_fg_feature_t i = 2; i < n; i++)
        fprintf(h, "#define CK_FEATURE_%s (ck_feature_handles[%u])\n", ck_fg_name(g, i), i - 2);
    fprintf(h, "\n/* Registers ckube's gates into g (AddVersioned for each). */\n"
               "int ck_features_register(struct ck_fg_gate *g, struct ck_fg_err *reterr);\n\n"
               "#endif /* CKUBE_FEATURES_H */\n");
    fprintf(c,
            "/* Generated by `featuregate gen-c` from features/ckube-features.yaml. Do not "
            "edit. */\n#include \"ckube_features.h\"\n\n"
            "ck_fg_feature_t ck_feature_handles[%zu];\n\n"
            "int ck_features_register(struct ck_fg_gate *g, struct ck_fg_err *reterr)\n{\n",
            n - 2 ? n - 2 : 1);
    for (ck_fg_feature_t i = 2; i < n; i++) {
        size_t ns;
        const struct ck_fg_spec *sp = ck_fg_specs(g, i, &ns);
        fprintf(c, "    static const struct ck_fg_spec s%u[] = {\n", i - 2);
        for (size_t j = 0; j < ns; j++) {
            ck_fg_version_fmt(sp[j].version, v, sizeof(v));
            ck_fg_version_fmt(sp[j].min_compat, m, sizeof(m));
            fprintf(c,
                    "        {.version = {%u, %u, 0, 2}, .has_version = true, .default_value = %s,"
                    " .lock_to_default = %s, .stage = CK_FG_%s, .min_compat = {%u, %u, 0, 2},"
                    " .has_min_compat = %s},\n",
                    sp[j].version.major, sp[j].version.minor,
                    sp[j].default_value ? "true" : "false",
                    sp[j].lock_to_default ? "true" : "false",
                    sp[j].stage == CK_FG_ALPHA  ? "ALPHA"
                    : sp[j].stage == CK_FG_BETA ? "BETA"
                    : sp[j].stage == CK_FG_GA   ? "GA"
                                                : "DEPRECATED",
                    sp[j].min_compat.major, sp[j].min_compat.minor,
                    sp[j].has_min_compat ? "true" : "false");
        }
        fprintf(c,
                "    };\n    if (ck_fg_add_versioned(g, \"%s\", s%u, %zu, &ck_feature_handles[%u], "
                "reterr) < 0)\n        return -1;\n",
                ck_fg_name(g, i), i - 2, ns, i - 2);
    }
    fprintf(c, "    (void)reterr;\n    return 0;\n}\n");
    ck_fg_gate_free(g);
    int rc = write_or_fail(h, o->header);
    return write_or_fail(c, o->source) | rc;
}

/* ---- upgrade-check -------------------------------------------------- */

/* upgrade-check's exit 2 (bad usage, unreadable input): the line fail() prints. */
static int fail_input(const char *msg)
{
    fail(msg);
    return 2;
}

/* X.Y (a "v" and a zero patch are accepted), for --from and --to. */
static int uc_version(const char *flag, const char *s, struct ck_fg_version *ret)
{
    struct ck_fg_err err = {0};
    char m[700];
    if (!s)
        snprintf(m, sizeof(m), "%s is required", flag);
    else if (ck_fg_emulated_version_parse(s, ret, &err) < 0 || strchr(s, '='))
        snprintf(m, sizeof(m), "invalid %s %s: want X.Y", flag, s);
    else
        return 0;
    return fail_input(m);
}

/*
 * The shipped lists: beside the binary (<bin>/../share/ckube/...), in the
 * install data dir, then in the source tree for a build-tree binary. A
 * version without a list gets the library's message and the reason: a
 * release's list is shipped only once it is shown to be, byte for byte, the
 * file that Kubernetes release carries, and the README.md beside the lists
 * (the first one found) says which releases are not yet verified, and why.
 */
static int uc_shipped(struct ck_fg_version v, char **ret)
{
    static char rel[PATH_MAX + 64];
    char exe[PATH_MAX], readme[PATH_MAX + 80], m[sizeof(readme) + 700];
    const char *dirs[3] = {NULL, CKUBE_FG_LISTS_INSTALL_DIR, CKUBE_FG_LISTS_SOURCE_DIR};
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        snprintf(rel, sizeof(rel), "%s/../share/ckube/kubernetes-feature-lists", dirname(exe));
        dirs[0] = rel;
    }
    struct ck_fg_err err = {0};
    int rc = ck_fg_upgrade_find_list(dirs, 3, v, ret, &err);
    if (rc == 0)
        return 0;
    if (rc != CK_FG_ENOENT)
        return fail_input(err.msg);
    readme[0] = '\0';
    for (size_t i = 0; i < 3 && !readme[0]; i++) {
        snprintf(readme, sizeof(readme), "%s/README.md", dirs[i] ? dirs[i] : "");
        if (!dirs[i] || access(readme, R_OK) != 0)
            readme[0] = '\0';
    }
    snprintf(m, sizeof(m),
             "%s; ckube ships a release's list only when it is, byte for byte, the file that "
             "Kubernetes release carries%s%s%s",
             err.msg, readme[0] ? " (" : "", readme[0] ? readme : "",
             readme[0] ? " says which releases are not yet verified, and why)" : "");
    return fail_input(m);
}

/* upgrade-check: 0 nothing blocks, 1 something blocks, 2 bad usage or input. */
static int cmd_upgrade_check(const struct opts *o)
{
    const char *out = o->output ? o->output : "text";
    bool json = strcmp(out, "json") == 0;
    struct ck_fg_version from, to;
    char *prev = NULL, *feat = NULL, *text = NULL;
    struct ck_fg_upgrade_report *r = NULL;
    struct ck_fg_err err = {0};
    int rc;

    if (!json && strcmp(out, "text") != 0) {
        usage_error("unknown output format (want text or json): ", out);
        return 2;
    }
    if ((rc = uc_version("--from", o->from, &from)) || (rc = uc_version("--to", o->to, &to)) ||
        (!o->previous && (rc = uc_shipped(from, &prev))) ||
        (!o->features && (rc = uc_shipped(to, &feat))))
        goto out;
    if (ck_fg_upgrade_check(o->previous ? o->previous : prev, o->features ? o->features : feat,
                            from, to, o->src, o->nsrc, &r, &err) < 0) {
        rc = fail_input(err.msg);
        goto out;
    }
    text = json ? ck_fg_upgrade_json(r) : ck_fg_upgrade_text(r);
    if (!text) {
        rc = fail_input("out of memory");
        goto out;
    }
    if (json && r->minors > 1)
        fprintf(stderr, "featuregate: note: the step crosses more than one minor version; "
                        "Kubernetes supports one at a time\n");
    printf("%s%s", text, json ? "\n" : "");
    rc = r->nblocking ? 1 : 0;
out:
    free(text);
    ck_fg_upgrade_report_free(r);
    free(prev);
    free(feat);
    return rc;
}

int main(int argc, char **argv)
{
    struct opts o = {0};
    if (argc < 2)
        return usage_error("missing command", "");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        return 0;
    }
    int (*run)(const struct opts *) = !strcmp(cmd, "eval")            ? cmd_eval
                                      : !strcmp(cmd, "list")          ? cmd_list
                                      : !strcmp(cmd, "lint")          ? cmd_lint
                                      : !strcmp(cmd, "gen-c")         ? cmd_gen_c
                                      : !strcmp(cmd, "upgrade-check") ? cmd_upgrade_check
                                                                      : NULL;
    if (!run)
        return usage_error("unknown command: ", cmd);
    bool upgrade = run == cmd_upgrade_check;
    int rc = parse_opts(argc - 1, argv + 1, &o, !upgrade);
    if (rc)
        return upgrade ? 2 : rc; /* upgrade-check: 2 for bad usage */
    return run(&o);
}
