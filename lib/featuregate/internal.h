/* internal.h - private to lib/featuregate; never installed.
 *
 * The gate's data: a registration table (immutable once published; a new
 * feature publishes a new table, old tables stay until the gate is freed)
 * and a chain of immutable snapshots of the values. g->cur points at the
 * newest snapshot; readers acquire-load it, writers (under g->mu) build a new
 * one and release-store it. Nothing is reclaimed before ck_fg_gate_free(), so
 * a reader can never touch freed memory.
 */
#ifndef CKUBE_FEATUREGATE_INTERNAL_H
#define CKUBE_FEATUREGATE_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <yaml.h>

#include "ckube/featuregate.h"
#include "ckube/internal/util.h" /* buffers, ParseBool, %q: libckube-util, nothing else of ckube */

struct ck__fg_feature {
    char *name;
    struct ck_fg_spec *specs; /* completed (R12), ascending; one allocation with given */
    struct ck_fg_spec *given; /* as registered, for copies and listings */
    size_t nspecs;
    uint32_t *deps; /* R13: handles this feature depends on, sorted by name; under g->mu */
    size_t ndeps;
};

struct ck__fg_table {
    struct ck__fg_table *older;
    size_t n;
    struct ck__fg_feature *f[];
};

struct ck__fg_snap {
    struct ck__fg_snap *older;
    const struct ck__fg_table *tab;
    struct ck_fg_version emu, minc;
    size_t n;
    int8_t *raw;  /* recorded user input (enabledRaw): -1 unset, 0, 1 */
    int8_t *expl; /* the enabled map: explicit and bulk-derived values */
    bool *val;    /* effective values, what ck_fg_enabled() reads */
};

struct ck_fg_gate {
    /*
     * The only field readers touch, alone on its cache line (the gate is
     * allocated 64-byte aligned) so that a writer taking mu or chaining
     * snaps does not evict it from the readers' caches.
     */
    _Alignas(64) _Atomic(struct ck__fg_snap *) cur;
    _Alignas(64) pthread_mutex_t mu; /* serializes writers */
    struct ck__fg_snap *snaps;       /* every snapshot, newest first (== cur) */
    struct ck__fg_table *table;      /* newest table, older ones chained */
    bool closed;
    bool legacy; /* register as before Kubernetes 1.33: sort specs, validate nothing */
    struct ck_fg_test_state *tests; /* active test overrides, newest first (T4) */
    ck_fg_log_fn log;
    void *log_ud;
};

/*
 * Registration as component-base did it before Kubernetes 1.33: AddVersioned
 * sorted each feature's specs by version and checked nothing else (the R5-R10
 * rules arrived in 1.33). Lists published for 1.31 and 1.32 break those rules
 * (a gate whose first spec is Deprecated at 1.31) yet loaded in those
 * releases; the upgrade check loads them this way. Set before registering.
 */
void ck__fg_set_legacy_registration(struct ck_fg_gate *g, bool on);

int ck__fg_errf(struct ck_fg_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ck__fg_logf(const struct ck_fg_gate *g, int v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Spec in effect at (emu, minc) (V3); PreAlpha when none applies. */
struct ck_fg_spec ck__fg_spec_at(const struct ck__fg_feature *f, struct ck_fg_version emu,
                                 struct ck_fg_version minc);
const struct ck__fg_snap *ck__fg_snap(const struct ck_fg_gate *g);
/* A snapshot for table t copying raw/expl from `from` (NULL: all unset). */
struct ck__fg_snap *ck__fg_snap_new(const struct ck__fg_table *t, const struct ck__fg_snap *from,
                                    struct ck_fg_version emu, struct ck_fg_version minc);
/* Computes s->val and makes s current (release-store). g->mu held. */
void ck__fg_publish(struct ck_fg_gate *g, struct ck__fg_snap *s);
int ck__fg_find(const struct ck__fg_table *t, const char *name);
/*
 * S12: with every explicit value resolved into s->expl, fails when an
 * enabled feature has a disabled dependency, naming both. g->mu held.
 */
int ck__fg_check_deps(const struct ck__fg_snap *s, struct ck_fg_err *reterr);
/* Stability order for R10 and R13: Deprecated 0 < Alpha = PreAlpha 1 < Beta 2 < GA 3. */
int ck__fg_stage_rank(enum ck_fg_stage s);
/* Pair array builder shared by the sources: names copied into one arena (helpers.c). */
struct ck__fg_pairs {
    struct ck_fg_pair *v;
    size_t *off; /* name offsets into names.p until finish */
    size_t n, cap;
    struct ck__buf names; /* the names, each NUL-terminated */
};
int ck__fg_pairs_add(struct ck__fg_pairs *p, const char *name, size_t namelen, bool value);
/* Hands the pairs out in the public (pairs, buf) shape, or frees on failure. */
int ck__fg_pairs_finish(struct ck__fg_pairs *p, int rc, struct ck_fg_pair **ret, size_t *ret_n,
                        char **ret_buf);

/* Parses one YAML document; on error *doc is zeroed (safe to delete). */
int ck__fg_yaml_load(const char *data, size_t len, yaml_document_t *doc, struct ck_fg_err *reterr);
/*
 * ck_fg_config_parse(), except that when bad is not NULL a featureGates
 * value that is not a boolean is handed to bad (gate name, message) and
 * skipped instead of failing the call. The upgrade check reports it.
 */
typedef void (*ck__fg_bad_fn)(void *ud, const char *name, const char *msg);
int ck__fg_config_parse_each(const char *data, size_t len, ck__fg_bad_fn bad, void *ud,
                             struct ck_fg_pair **ret, size_t *ret_n, char **ret_buf,
                             struct ck_fg_err *reterr);
/* Reads a whole file (capped at 16 MiB) into a malloc'ed buffer. */
int ck__fg_read_file(const char *path, char **ret, size_t *ret_len, struct ck_fg_err *reterr);
/* Feature indices of snapshot s sorted by name (byte order); malloc'ed. */
size_t *ck__fg_sorted(const struct ck__fg_snap *s);

#endif /* CKUBE_FEATUREGATE_INTERNAL_H */
