/*
 * featuregate.h - libfeaturegate: Kubernetes feature gates in C.
 *
 * Mirrors k8s.io/component-base/featuregate (versioned specs, emulation and
 * min-compatibility versions, AllAlpha/AllBeta) and client-go's environment
 * variable gates. Rule ids (M1, S9, V7, ...) refer to the project's feature
 * gate semantics specification; docs/internals/featuregate.md explains the
 * design and docs/differences.md the deliberate differences (D1: a failing
 * set changes nothing at all; O4: every value an emulation change flips is
 * logged, not only those already read).
 *
 * Of ckube this library needs only libckube-util (which needs nothing of ckube);
 * besides, libyaml (lists, config files) and jansson (JSON outputs).
 * It prints nothing (but the line on stderr before it aborts on a programming
 * error, Q1); warnings and log lines leave through ck_fg_set_logger().
 *
 * Threading: ck_fg_enabled(), ck_fg_enabled_many(), ck_fg_enabled_name(),
 * ck_fg_lookup() and ck_fg_explicitly_set() are lock-free and may
 * run on any thread at any time, also while another thread sets values: a
 * reader sees the whole old state or the whole new state, never a mix.
 * Every other call on a gate serializes on the gate's mutex.
 *
 * Precedence of sources (ck_fg_apply_sources(), rule P5): built-in defaults
 * < environment (KUBE_FEATURE_<Name>, only when asked for) < the config
 * file's featureGates: map < --feature-gates flags (repeatable, joined with
 * commas so the last value wins per name). The sources are merged per gate
 * name into one map applied with one ck_fg_set_from_map(), so an explicit
 * value from any source beats AllAlpha/AllBeta from any source (S9).
 */
#ifndef CKUBE_FEATUREGATE_H
#define CKUBE_FEATUREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes (negative returns). */
#define CK_FG_EINVAL (-22) /* bad input: value, name, version, file content */
#define CK_FG_ENOENT (-2)  /* unknown feature, missing file */
#define CK_FG_EEXIST (-17) /* conflicting re-registration */
#define CK_FG_EPERM  (-1)  /* locked gate, closed gate */
#define CK_FG_ENOMEM (-12) /* allocation failed */

/* The library's own error struct: code and one sentence for a human. */
struct ck_fg_err {
    int code;
    char msg[512];
};

enum ck_fg_stage {
    CK_FG_PREALPHA = 0, /* internal: does not exist yet at the emulated version */
    CK_FG_ALPHA,
    CK_FG_BETA,
    CK_FG_GA,
    CK_FG_DEPRECATED,
};

/* "ALPHA", "BETA", "" (GA), "DEPRECATED", "PRE-ALPHA" (M2). */
const char *ck_fg_stage_string(enum ck_fg_stage s);
/* "Alpha", "Beta", "GA", "Deprecated" as in the YAML list (M3); "PreAlpha". */
const char *ck_fg_stage_list_name(enum ck_fg_stage s);

/* A version: major.minor[.patch]; ncomp is how many components were given. */
struct ck_fg_version {
    uint32_t major, minor, patch;
    uint8_t ncomp;
};

/*
 * Parses a version by apimachinery's rules (V1): optional leading spaces and
 * "v", at least two dot-separated integers, no leading zero on the first;
 * anything after the numbers is ignored. Returns 0 or CK_FG_EINVAL.
 */
int ck_fg_version_parse(const char *s, struct ck_fg_version *ret, struct ck_fg_err *reterr);
/* Numeric comparison per component (missing ones count as 0): <0, 0, >0. */
int ck_fg_version_cmp(struct ck_fg_version a, struct ck_fg_version b);
/* Formats as "X.Y" (or "X.Y.Z" when ncomp is 3) into buf; returns buf. */
char *ck_fg_version_fmt(struct ck_fg_version v, char *buf, size_t n);
struct ck_fg_version ck_fg_version_mm(uint32_t major, uint32_t minor);
/* v minus n minor versions, never below minor 0 (V1 SubtractMinor). */
struct ck_fg_version ck_fg_version_sub_minor(struct ck_fg_version v, uint32_t n);

/*
 * The emulation window of Kubernetes components (V7, V8, P2): floor =
 * max(binary - 3, 1.31), never above the binary. Checks floor <= E <= binary
 * and floor <= M <= E with Kubernetes' error texts. When min_compat is NULL,
 * M is derived as max(E - 1, floor) and stored in *ret_min_compat.
 */
int ck_fg_window_check(struct ck_fg_version binary, struct ck_fg_version emulated,
                       const struct ck_fg_version *min_compat, struct ck_fg_version *ret_min_compat,
                       struct ck_fg_err *reterr);

/*
 * Parses an --emulated-version value (V9): "X.Y", "vX.Y", "kube=X.Y",
 * "X.Y.0"; a non-zero patch, another component or garbage is an error
 * naming the value.
 */
int ck_fg_emulated_version_parse(const char *s, struct ck_fg_version *ret,
                                 struct ck_fg_err *reterr);

/* One versioned spec (M1). has_min_compat marks MinCompatibilityVersion. */
struct ck_fg_spec {
    struct ck_fg_version version;
    bool has_version;
    bool default_value;
    bool lock_to_default;
    enum ck_fg_stage stage;
    struct ck_fg_version min_compat;
    bool has_min_compat;
};

/* A feature handle: the registration index. AllAlpha is 0, AllBeta is 1. */
typedef uint32_t ck_fg_feature_t;
#define CK_FG_ALL_ALPHA ((ck_fg_feature_t)0)
#define CK_FG_ALL_BETA  ((ck_fg_feature_t)1)

/* A name=value pair, for ck_fg_set_from_map() and the sources. */
struct ck_fg_pair {
    const char *name;
    bool value;
};

struct ck_fg_gate;

/* Log levels of the callback: 0 info (warnings are info, O3), 1 and 2 verbose. */
typedef void (*ck_fg_log_fn)(void *userdata, int verbosity, const char *msg);

/*
 * A new gate holding AllAlpha and AllBeta (M4), emulating `emulated` with
 * min-compatibility emulated - 1 (V2). Returns NULL only on allocation
 * failure. Free with ck_fg_gate_free(), which returns NULL.
 */
struct ck_fg_gate *ck_fg_gate_new(struct ck_fg_version emulated);
struct ck_fg_gate *ck_fg_gate_free(struct ck_fg_gate *g);

/* Where log lines go; NULL discards them (the default). */
void ck_fg_set_logger(struct ck_fg_gate *g, ck_fg_log_fn fn, void *userdata);

/*
 * Registers a feature with versioned specs (R2-R12), ascending by version.
 * Stores the handle in *ret (may be NULL). An identical re-add is a no-op
 * returning the existing handle (R4); a different one is CK_FG_EEXIST; after
 * ck_fg_close() it is CK_FG_EPERM (R3). On error nothing changes.
 */
int ck_fg_add_versioned(struct ck_fg_gate *g, const char *name, const struct ck_fg_spec *specs,
                        size_t nspecs, ck_fg_feature_t *ret, struct ck_fg_err *reterr);
/* Registers an unversioned spec: its version is forced to 0.0 (R1). */
int ck_fg_add(struct ck_fg_gate *g, const char *name, struct ck_fg_spec spec, ck_fg_feature_t *ret,
              struct ck_fg_err *reterr);
/* Closes registration (R3): flags were registered, start-up is done. */
void ck_fg_close(struct ck_fg_gate *g);

/*
 * Declares that feature needs deps (R13, Kubernetes 1.35+): all must be
 * known; at every spec of feature, each dependency's spec in effect at that
 * version must be at least as stable, default-on if feature is, locked if
 * feature is; the graph must stay acyclic. Merged with earlier calls,
 * sorted by name, de-duplicated. All or nothing; CK_FG_EPERM after
 * ck_fg_close(). From then on a set, emulation change or validate that
 * leaves feature enabled and a dependency disabled fails (S12):
 * "X is enabled, but depends on features that are disabled: [Y]".
 */
int ck_fg_add_dependencies(struct ck_fg_gate *g, const char *feature, const char *const *deps,
                           size_t n, struct ck_fg_err *reterr);
/*
 * The dependencies of f (*ret_n of them, sorted by name), owned by the gate;
 * valid until the next ck_fg_add_dependencies() for f.
 */
const ck_fg_feature_t *ck_fg_dependencies(const struct ck_fg_gate *g, ck_fg_feature_t f,
                                          size_t *ret_n);

/*
 * Parses "A=true,B=false" (S1) and applies it (S2-S11) as one atomic
 * change: either every pair applies or nothing changes, neither values nor
 * recorded input (D1). Errors carry Kubernetes' texts.
 */
int ck_fg_set(struct ck_fg_gate *g, const char *s, struct ck_fg_err *reterr);
/* Same for pairs (SetFromMap); on duplicate names the last wins. */
int ck_fg_set_from_map(struct ck_fg_gate *g, const struct ck_fg_pair *pairs, size_t n,
                       struct ck_fg_err *reterr);
/*
 * Sets the emulation and min-compatibility versions and re-resolves every
 * recorded value (V6). On error nothing changes, versions included.
 * ck_fg_set_emulation_version() uses M = E - 1 (V2).
 */
int ck_fg_set_versions(struct ck_fg_gate *g, struct ck_fg_version emulated,
                       struct ck_fg_version min_compat, struct ck_fg_err *reterr);
int ck_fg_set_emulation_version(struct ck_fg_gate *g, struct ck_fg_version emulated,
                                struct ck_fg_err *reterr);
struct ck_fg_version ck_fg_emulation_version(struct ck_fg_gate *g);
struct ck_fg_version ck_fg_min_compat_version(struct ck_fg_gate *g);
/* Re-resolves the recorded input without storing anything (S15). */
int ck_fg_validate(struct ck_fg_gate *g, struct ck_fg_err *reterr);
/* Forgets an explicit value (S14). */
int ck_fg_reset_to_default(struct ck_fg_gate *g, const char *name, struct ck_fg_err *reterr);
/* Changes the default of the spec in effect (S13); not after close. */
int ck_fg_override_default(struct ck_fg_gate *g, const char *name, bool value,
                           struct ck_fg_err *reterr);
/*
 * The same for the spec in effect at version (min-compatibility one below),
 * whatever the gate emulates (OverrideDefaultAtVersion): e.g. change the
 * default a feature will have once it reaches Beta.
 */
int ck_fg_override_default_at(struct ck_fg_gate *g, const char *name, bool value,
                              struct ck_fg_version version, struct ck_fg_err *reterr);

/*
 * The hot path: is the feature on? An acquire-load and an array read; no
 * lock, no allocation. A handle that this gate did not hand out is a
 * programming error and aborts with a message (Kubernetes panics, Q1).
 */
bool ck_fg_enabled(const struct ck_fg_gate *g, ck_fg_feature_t f);
/*
 * Reads n features from one snapshot, so the values are consistent with each
 * other even while another thread sets: out[i] = enabled(fs[i]). Lock-free.
 */
void ck_fg_enabled_many(const struct ck_fg_gate *g, const ck_fg_feature_t *fs, size_t n, bool *out);
/* By-name lookup; an unknown name aborts like Kubernetes' panic (Q1). */
bool ck_fg_enabled_name(const struct ck_fg_gate *g, const char *name);
/* Non-aborting lookup: 0 and *ret, or CK_FG_ENOENT. */
int ck_fg_lookup(const struct ck_fg_gate *g, const char *name, ck_fg_feature_t *ret);
/* Was the name given by the user (recorded input, M5)? */
bool ck_fg_explicitly_set(const struct ck_fg_gate *g, const char *name);

/* Introspection. Feature count, names and spec in effect (V3). */
size_t ck_fg_count(const struct ck_fg_gate *g);
const char *ck_fg_name(const struct ck_fg_gate *g, ck_fg_feature_t f);
struct ck_fg_spec ck_fg_spec_in_effect(const struct ck_fg_gate *g, ck_fg_feature_t f);
/* The registered specs of a feature; *ret_n receives their count. */
const struct ck_fg_spec *ck_fg_specs(const struct ck_fg_gate *g, ck_fg_feature_t f, size_t *ret_n);

/*
 * Text outputs; each returns a malloc'ed string the caller frees, or NULL on
 * allocation failure.
 *  - known features (Q3): one line per Alpha/Beta feature, byte-order sorted;
 *  - string (Q4): "A=true,B=false" of the explicit values, sorted;
 *  - metrics (O1): Prometheus text of kubernetes_feature_enabled;
 *  - startup line: every non-PreAlpha gate's effective state, one line;
 *  - all JSON (P9): {"Name": bool, ...} of every non-PreAlpha gate (Q2).
 */
char *ck_fg_known_features(const struct ck_fg_gate *g);
char *ck_fg_string(const struct ck_fg_gate *g);
char *ck_fg_metrics_text(const struct ck_fg_gate *g);
char *ck_fg_startup_line(const struct ck_fg_gate *g);
char *ck_fg_all_json(const struct ck_fg_gate *g);
/* Logs the startup line at verbosity 0 through the gate's logger. */
void ck_fg_log_startup(const struct ck_fg_gate *g);

/*
 * V10: when binary is newer than the emulation version and Alpha features
 * are enabled, logs (verbosity 0) "component has alpha features enabled in
 * emulated version, this is unsupported features=[A B]" as Kubernetes'
 * compatibility registry does after parsing its flags. Returns how many.
 */
int ck_fg_warn_emulated_alpha(const struct ck_fg_gate *g, struct ck_fg_version binary);

enum ck_fg_table_format { CK_FG_TABLE_TEXT, CK_FG_TABLE_MARKDOWN, CK_FG_TABLE_JSON };
/*
 * The docs table: one row per spec (name, default, stage, since, until,
 * locked), features by name, AllAlpha/AllBeta left out. Malloc'ed string.
 */
char *ck_fg_docs_table(const struct ck_fg_gate *g, enum ck_fg_table_format fmt);

/*
 * A deep copy (Q5): registrations, values, recorded input, versions and the
 * closed flag. With reset, only registrations and versions (DeepCopyAndReset).
 * Used to validate a change before committing it. NULL on allocation failure.
 */
struct ck_fg_gate *ck_fg_copy(const struct ck_fg_gate *g, bool reset);

/* ---- Sources ---------------------------------------------------------- */

/*
 * Parses a Set string (S1) into pairs, last occurrence first-class: *ret
 * (malloc'ed, names point into *ret_buf, free both) and *ret_n. Used by the
 * CLI and the fuzz target; ck_fg_set() uses it.
 */
int ck_fg_parse_pairs(const char *s, struct ck_fg_pair **ret, size_t *ret_n, char **ret_buf,
                      struct ck_fg_err *reterr);

/*
 * Reads a component-config style YAML file's top-level featureGates: map of
 * name -> boolean (P8). ck_fg_config_parse() does the same on a buffer.
 * Other top-level keys are ignored; a missing key means no pairs. Returns
 * pairs as ck_fg_parse_pairs() does.
 */
int ck_fg_config_load(const char *path, struct ck_fg_pair **ret, size_t *ret_n, char **ret_buf,
                      struct ck_fg_err *reterr);
int ck_fg_config_parse(const char *data, size_t len, struct ck_fg_pair **ret, size_t *ret_n,
                       char **ret_buf, struct ck_fg_err *reterr);

/*
 * client-go's environment rules (G4, P7): for every gate known at the
 * current versions, read KUBE_FEATURE_<exact name> (getenv, or the lookup
 * function when not NULL), parse it without trimming; invalid values and
 * values contradicting a lock are skipped with a warning through the logger.
 * Returns the accepted pairs as ck_fg_parse_pairs() does.
 */
typedef const char *(*ck_fg_getenv_fn)(const char *name);
int ck_fg_env_pairs(struct ck_fg_gate *g, ck_fg_getenv_fn lookup, struct ck_fg_pair **ret,
                    size_t *ret_n, char **ret_buf, struct ck_fg_err *reterr);

/*
 * The one-call helper for components (P5): merges env (when use_env) <
 * config file (when config_path) < flags (each a Set string, joined with
 * commas: C2/P6) per name and applies them with one ck_fg_set_from_map().
 */
int ck_fg_apply_sources(struct ck_fg_gate *g, const char *const *flags, size_t nflags,
                        const char *config_path, bool use_env, struct ck_fg_err *reterr);
/*
 * The same with the config file's contents instead of its path, for a
 * component that has read its config file already (config may be NULL:
 * no config). The featureGates: map is taken from the top level.
 */
int ck_fg_apply_sources_buf(struct ck_fg_gate *g, const char *const *flags, size_t nflags,
                            const char *config, size_t config_len, bool use_env,
                            struct ck_fg_err *reterr);

/* ---- Versioned feature lists (Kubernetes' YAML format) ---------------- */

/*
 * Loads a list in the format of Kubernetes' versioned_feature_list.yaml into
 * g, one AddVersioned per entry in file order (P4). On error the message
 * names the gate; entries before the bad one stay registered.
 */
int ck_fg_list_load(struct ck_fg_gate *g, const char *path, struct ck_fg_err *reterr);
int ck_fg_list_parse(struct ck_fg_gate *g, const char *data, size_t len, struct ck_fg_err *reterr);

/*
 * Lints a list (L1, L2, L4, L5 and the R rules): calls report once per
 * finding with a line naming the gate. Returns the number of findings, or a
 * negative code when the file cannot be read or parsed at all.
 */
typedef void (*ck_fg_report_fn)(void *userdata, const char *line);
int ck_fg_list_lint(const char *path, ck_fg_report_fn report, void *userdata,
                    struct ck_fg_err *reterr);

/*
 * L3: compares a list with its previous version (previous) for a release
 * at version current: removing an Alpha feature is fine; a feature whose
 * last spec is Beta cannot go; GA or Deprecated must be locked first, and
 * if locked after 1.31, stays until locked version + 3 minors (emulation).
 * Reports and returns findings like ck_fg_list_lint().
 */
int ck_fg_list_lint_removals(const char *previous, const char *path, struct ck_fg_version current,
                             ck_fg_report_fn report, void *userdata, struct ck_fg_err *reterr);

/* ---- Upgrade check ------------------------------------------------------ */

/*
 * Where a feature-gate setting comes from: a component config file (any
 * YAML with a top-level featureGates: map; path in value) or one
 * --feature-gates value. Config files apply in the order given (a later
 * file wins per name), then every flag, joined as eval joins them (the last
 * value wins per name): the precedence of ck_fg_apply_sources().
 */
struct ck_fg_upgrade_source {
    bool is_config;
    const char *value;
};

/*
 * One finding about one gate. gate, message and source are owned by the
 * report; reason is a static string: blocking "Removed", "Unknown",
 * "Locked", "Invalid"; changes "DefaultChanged"; warnings "Deprecated",
 * "GA", "WillBeRemoved". source is a config path, "--feature-gates" (with
 * " #N" when several flags were given) or "default". from and to are the
 * effective values at the two versions (changes only).
 */
struct ck_fg_upgrade_finding {
    char *gate;
    const char *reason;
    char *message;
    char *source;
    bool from, to;
};

/* The result of ck_fg_upgrade_check(); each array is sorted by gate name. */
struct ck_fg_upgrade_report {
    struct ck_fg_version from, to;
    uint32_t minors; /* minor versions between from and to; 1 is a supported step */
    struct ck_fg_upgrade_finding *blocking, *changes, *warnings;
    size_t nblocking, nchanges, nwarnings;
};

/*
 * The pre-upgrade check: evaluates the settings of srcs at `from` with the
 * list old_list and at `to` with new_list (binary = emulated version, min
 * compatibility one minor below, as a component run without emulation
 * flags), through this library's own set path, and reports per gate what
 * will stop the component at `to` (blocking), which effective values
 * change although the settings do not (changes), and which settings
 * Kubernetes warns about at `to` (warnings). Downgrades and steps of
 * several minors are allowed.
 *
 * A setting that does not parse (a --feature-gates piece, a featureGates
 * value that is not a boolean) is an "Invalid" finding, not an error.
 * Errors, with *ret untouched: a list or config file that cannot be read or
 * is not valid (CK_FG_ENOENT, CK_FG_EINVAL, the message names the file),
 * CK_FG_ENOMEM. On success *ret is a report the caller frees with
 * ck_fg_upgrade_report_free(), which returns NULL.
 */
int ck_fg_upgrade_check(const char *old_list, const char *new_list, struct ck_fg_version from,
                        struct ck_fg_version to, const struct ck_fg_upgrade_source *srcs,
                        size_t nsrcs, struct ck_fg_upgrade_report **ret, struct ck_fg_err *reterr);
struct ck_fg_upgrade_report *ck_fg_upgrade_report_free(struct ck_fg_upgrade_report *r);

/*
 * Renderings of a report, malloc'ed (NULL on allocation failure): JSON,
 * {"from":"X.Y","to":"X.Y","blocking":[...],"changes":[...],"warnings":[...]}
 * with entries {"gate","reason","message","source"} (changes add "from" and
 * "to"); and a short text table for a terminal, which also says when the
 * step is more than one minor.
 */
char *ck_fg_upgrade_json(const struct ck_fg_upgrade_report *r);
char *ck_fg_upgrade_text(const struct ck_fg_upgrade_report *r);

/*
 * The shipped Kubernetes list for version v: the first readable
 * "<dir>/X.Y.yaml" of dirs, in order. Returns 0 and a malloc'ed path in
 * *ret_path, or CK_FG_ENOENT with a message naming the versions the first
 * existing directory ships.
 */
int ck_fg_upgrade_find_list(const char *const *dirs, size_t ndirs, struct ck_fg_version v,
                            char **ret_path, struct ck_fg_err *reterr);

/* ---- Providers (client-go's Gates / Registry) ------------------------- */

/*
 * The process-wide provider: the gate libraries consult (client-go's
 * FeatureGates()). ck_fg_provider_replace() swaps it (ReplaceFeatureGates)
 * and returns the previous one, which the caller still owns. NULL until set.
 */
struct ck_fg_gate *ck_fg_provider(void);
struct ck_fg_gate *ck_fg_provider_replace(struct ck_fg_gate *g);
/*
 * Folds src's features into dst (G3): with versioned, every spec list as is
 * (AddVersionedFeaturesToExistingFeatureGates); else each feature's latest
 * spec with its version cleared (AddFeaturesToExistingFeatureGates).
 */
int ck_fg_fold(struct ck_fg_gate *dst, const struct ck_fg_gate *src, bool versioned,
               struct ck_fg_err *reterr);

/* ---- Test helper (T1-T5) ---------------------------------------------- */

/*
 * Sets pairs (and, when emulated is not NULL, the emulation version first,
 * with min-compatibility one below) for the duration of one test, like
 * component-base's SetFeatureGatesDuringTest: AllAlpha/AllBeta set every
 * Alpha/Beta gate explicitly (T2); a dependency set to false switches off
 * the default-on features that need it unless pairs name them (T3).
 * ck_fg_test_restore() puts back the values, recorded input and versions
 * saved by the override and frees the saved state; restore overrides in
 * reverse order. NULL means the override failed and changed nothing
 * (*reterr says why).
 *
 * test_name (may be NULL) enables T4: while this override is active,
 * another override with a name that is neither the same nor a subtest
 * ("Name/Sub") fails if it sets one of the same features, or the emulation
 * version at another version ("Detected parallel setting of a feature gate
 * by both ...").
 */
struct ck_fg_test_state;
struct ck_fg_test_state *ck_fg_test_override(struct ck_fg_gate *g, const char *test_name,
                                             const struct ck_fg_pair *pairs, size_t n,
                                             const struct ck_fg_version *emulated,
                                             struct ck_fg_err *reterr);
void ck_fg_test_restore(struct ck_fg_test_state *st);

#ifdef __cplusplus
}
#endif

#endif /* CKUBE_FEATUREGATE_H */
