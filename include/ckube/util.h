/*
 * ckube/util.h - the shared ground of every ckube library: error values,
 * klog-style logging and build/version information.
 *
 * Errors are returned, never logged by the library that returns them: an
 * action returns 0 or a negative CK_E* code and, when the caller passed one,
 * fills a struct ck_err with a sentence for a human.
 *
 * Logging mirrors k8s.io/klog/v2 and component-base/logs: severity letters
 * I/W/E/F, a global verbosity (-v N) below which V(n) messages are dropped,
 * the klog text header, and a JSON format (one object per line). All logging
 * calls are thread-safe; a line is written with one write so lines from
 * different threads never interleave.
 */
#ifndef CKUBE_UTIL_H
#define CKUBE_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

/* ---- errors ------------------------------------------------------------ */

/* Error codes are negated errno values, so strerror(-code) always works. */
#define CK_EINVAL     (-EINVAL)     /* bad argument or malformed input */
#define CK_ENOMEM     (-ENOMEM)     /* allocation failed */
#define CK_EIO        (-EIO)        /* I/O or backend failure */
#define CK_EADDRINUSE (-EADDRINUSE) /* listen address taken */
#define CK_ENOENT     (-ENOENT)     /* no such object or file */
#define CK_EEXIST     (-EEXIST)     /* already exists */
#define CK_EPERM      (-EPERM)      /* refused by policy */
#define CK_ECONFLICT  (-ESTALE)     /* the caller's view is stale: revision mismatch */
#define CK_ECOMPACTED (-ERANGE)     /* revision compacted away (HTTP 410 Gone) */

/*
 * One field cause of a refused request (metav1.StatusCause): a CauseType such
 * as "FieldValueInvalid", a message without the field, and the field's JSON
 * path as Kubernetes prints it (spec.containers[0].name).
 */
struct ck_err_cause {
    const char *type; /* static string */
    char *message;    /* owned by the error */
    char *field;      /* owned by the error */
};

/*
 * What went wrong, for a human and, on the API path, for a client: the
 * library's code and sentence, plus what a Kubernetes Status carries (HTTP
 * code, StatusReason, details naming the object, field causes). The caller
 * owns it, usually on the stack.
 *
 * ck_err_set() fills only the first four members and clears the rest; it
 * never allocates and never frees, so it may be used on an uninitialised
 * error and needs no release. The API setters below may allocate (a message
 * longer than msg, causes): an error they filled is released with
 * ck_err_release(), and they release what the error held before, so it must
 * be zero-initialised or previously set. What they cannot allocate is
 * dropped (the message is cut to msg, a cause is left out): reporting an
 * error never fails.
 */
struct ck_err {
    int code;           /* negative CK_E* value, 0 when nothing failed */
    int http_status;    /* 404, 409, 422 ... when it came from the API layer, else 0 */
    const char *reason; /* Kubernetes StatusReason (a static string) or NULL */
    char msg[256];      /* one sentence: pods "web-1" not found (cut to fit) */
    char *long_msg;     /* the whole sentence when it did not fit msg, else NULL */
    /* metav1.StatusDetails: what the error is about */
    char name[254];    /* the object's name, or "" */
    char uid[64];      /* its uid (a delete's Success Status), or "" */
    const char *group; /* API group, static or outliving the error; NULL: none */
    const char *kind;  /* the resource (the Kind for Invalid); same lifetime; NULL: none */
    struct ck_err_cause *causes;
    size_t n_causes;
};

/*
 * Fills *err (when err is not NULL) with code and a printf-style message and
 * returns code, so that failing is one line: `return ck_err_set(err, ...);`.
 */
int ck_err_set(struct ck_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * As ck_err_set() with the message text, kept whole in long_msg when it does not fit
 * msg (free it with ck_err_release()): for messages of several lines, such as a
 * compiler's list of errors.
 */
int ck_err_set_long(struct ck_err *err, int code, const char *text);

/* Frees what the API setters allocated and clears *err. NULL is a no-op. */
void ck_err_release(struct ck_err *err);

/* The whole message: long_msg when there is one, else msg. */
const char *ck_err_message(const struct ck_err *err);

/*
 * The HTTP code Kubernetes answers for a StatusReason ("NotFound": 404,
 * "Expired": 410, ...) and the CK_E* code ckube gives it (CK_ENOENT,
 * CK_ECOMPACTED, ...). An unknown reason is 500 and CK_EIO.
 */
int ck_err_reason_http(const char *reason);
int ck_err_reason_code(const char *reason);

/*
 * The API setters. Each fills *err with a StatusReason (any of
 * apimachinery's; an unknown one is a bug and becomes InternalError), its
 * HTTP code and CK_E* code, and a printf-style message; details and causes
 * are cleared. Each returns the negative code.
 */
int ck_err_status(struct ck_err *err, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 500 InternalError, "Internal error occurred: <message>", code CK_EIO. */
int ck_err_internal(struct ck_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 500 InternalError "Internal error occurred: out of memory", code CK_ENOMEM. */
int ck_err_no_memory(struct ck_err *err);

/*
 * The errors about one object of resource (plural, lower case) in group
 * ("" for the core group), worded as apimachinery's constructors word them
 * and with details {name, group, kind: resource}; group and resource must
 * outlive err (static kind tables do):
 *   404 NotFound       `<resource>[.<group>] "<name>" not found`
 *   409 AlreadyExists  `<resource>[.<group>] "<name>" already exists`
 *   409 Conflict       `Operation cannot be fulfilled on <resource>[.<group>] "<name>": <why>`
 */
int ck_err_not_found(struct ck_err *err, const char *group, const char *resource, const char *name);
int ck_err_already_exists(struct ck_err *err, const char *group, const char *resource,
                          const char *name);
int ck_err_conflict(struct ck_err *err, const char *group, const char *resource, const char *name,
                    const char *why);

/* Sets the details' name (copied, cut to fit), group and kind (borrowed). */
void ck_err_set_details(struct ck_err *err, const char *group, const char *kind, const char *name);

/*
 * Appends a cause (type static; message and field copied). Returns 0, or
 * CK_ENOMEM leaving the causes as they were.
 */
int ck_err_add_cause(struct ck_err *err, const char *type, const char *message, const char *field);

/* ---- logging ----------------------------------------------------------- */

enum ck_log_severity {
    CK_LOG_INFO,
    CK_LOG_WARNING,
    CK_LOG_ERROR,
    CK_LOG_FATAL, /* logs, then exits the process with status 255 as klog does */
};

enum ck_log_format {
    CK_LOG_FORMAT_TEXT, /* klog: I1122 10:00:00.000000   1234 file.c:42] msg */
    CK_LOG_FORMAT_JSON, /* {"ts":1700000000.123456,"caller":"file.c:42","msg":"...","v":0} */
};

/* Sets the verbosity: V(n) messages with n <= level are written. Default 0. */
void ck_log_set_verbosity(int level);
int ck_log_verbosity(void);

/* True when a message at verbosity v would be written (klog's V(v).Enabled()). */
bool ck_log_v(int v);

void ck_log_set_format(enum ck_log_format format);

/*
 * Parses a --logging-format value ("text" or "json"). Returns 0 and sets
 * *ret_format, or CK_EINVAL leaving it untouched.
 */
int ck_log_parse_format(const char *name, enum ck_log_format *ret_format);

/*
 * Redirects log lines to out (borrowed; the caller keeps it open while in use).
 * NULL restores the default, standard error.
 */
void ck_log_set_output(FILE *out);

/* Writes one printf-style line. Use the CK_LOG* macros, which fill file and line. */
void ck_log_printf(enum ck_log_severity severity, int v, const char *file, int line,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/*
 * Writes one structured line (klog's InfoS/ErrorS): msg, then key/value string
 * pairs ending with a NULL key. Text form: `"msg" key="value"`; JSON form: each
 * pair becomes a member of the line's object.
 */
void ck_log_kv(enum ck_log_severity severity, int v, const char *file, int line, const char *msg,
               ...) __attribute__((sentinel));

#define CK_LOGI(...)    ck_log_printf(CK_LOG_INFO, 0, __FILE__, __LINE__, __VA_ARGS__)
#define CK_LOGV(v, ...) ck_log_printf(CK_LOG_INFO, (v), __FILE__, __LINE__, __VA_ARGS__)
#define CK_LOGW(...)    ck_log_printf(CK_LOG_WARNING, 0, __FILE__, __LINE__, __VA_ARGS__)
#define CK_LOGE(...)    ck_log_printf(CK_LOG_ERROR, 0, __FILE__, __LINE__, __VA_ARGS__)
#define CK_LOGF(...)    ck_log_printf(CK_LOG_FATAL, 0, __FILE__, __LINE__, __VA_ARGS__)
#define CK_LOGS(v, msg, ...)                                                                       \
    ck_log_kv(CK_LOG_INFO, (v), __FILE__, __LINE__, (msg), __VA_ARGS__, (const char *)NULL)
#define CK_LOGS_ERR(msg, ...)                                                                      \
    ck_log_kv(CK_LOG_ERROR, 0, __FILE__, __LINE__, (msg), __VA_ARGS__, (const char *)NULL)

/* ---- base64 ------------------------------------------------------------ */

/* RFC 4648 base64 of len bytes, NUL-terminated; caller frees. NULL when out of memory. */
char *ck_base64_encode(const void *data, size_t len);

/*
 * Decodes base64 (standard or URL-safe alphabet; line breaks skipped;
 * decoding stops at the first '='). Returns the bytes plus a NUL the caller
 * frees, their count in *ret_len (may be NULL); NULL when text is malformed
 * or memory runs out.
 */
char *ck_base64_decode(const char *text, size_t *ret_len);

/* ---- version ----------------------------------------------------------- */

/*
 * Build information shaped like Kubernetes' version.Info. ckube reports the
 * Kubernetes API version it serves as major/minor (kubectl picks its
 * behaviour from the minor) and its own version inside gitVersion's build
 * metadata: v1.32.0+ckube.0.1.0. Every string is static.
 */
struct ck_version_info {
    const char *major;
    const char *minor;
    const char *git_version;
    const char *git_commit;
    const char *git_tree_state; /* "clean", "dirty" or "" when not built from git */
    const char *build_date;     /* RFC 3339, UTC */
    const char *go_version;     /* always "": ckube is not built with Go */
    const char *compiler;       /* the C compiler, e.g. "gcc 12.2.0" */
    const char *platform;       /* "linux/amd64" */
};

const struct ck_version_info *ck_version(void);

/* ckube's own release, e.g. "0.1.0". */
const char *ck_version_release(void);

/*
 * Renders the version as the JSON object Kubernetes serves at /version (keys
 * major, minor, gitVersion, ...), indented when pretty. Returns a string the
 * caller frees with free(), or NULL when out of memory.
 */
char *ck_version_json(bool pretty);

#endif /* CKUBE_UTIL_H */
